// libFuzzer target: kiln::untar on arbitrary bytes. Every input must either extract or fail
// with a kiln::Error; anything else (a crash, another exception, a sanitizer report) is a bug,
// and so is any change next to the target directory: a sibling sentinel must stay untouched.
//
//   cmake --workflow --preset fuzz                        # builds, then a short smoke run
//   build/fuzz/fuzz/untar_fuzz -max_total_time=600 fuzz/corpus/untar   # a longer session
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "kiln/error.h"
#include "kiln/tar.h"
#include "kiln/temp_directory.h"

namespace {

namespace fs = std::filesystem;

constexpr const char* kSentinelText = "outside the target: must never change";

struct Sandbox {
  kiln::TempDirectory root;
  fs::path archive = root / "input.tar";
  fs::path target = root / "out";
  fs::path sentinel = root / "sentinel";

  Sandbox() { std::ofstream(sentinel) << kSentinelText; }

  bool sentinel_intact() const {
    std::ifstream in(sentinel);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::error_code ec;
    return text == kSentinelText && fs::is_regular_file(fs::symlink_status(sentinel, ec)) &&
           std::distance(fs::directory_iterator(root.path()), fs::directory_iterator{}) <= 3;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Sandbox sandbox;
  {
    std::ofstream out(sandbox.archive, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    kiln::untar(sandbox.archive, sandbox.target);
  } catch (const kiln::Error&) {
    // Refusing bad input with a clear error is the expected outcome for most inputs.
  }
  if (!sandbox.sentinel_intact()) {
    (void)std::fprintf(stderr, "untar_fuzz: something outside the target directory changed\n");
    std::abort();
  }
  std::error_code ec;
  fs::remove_all(sandbox.target, ec);
  return 0;
}
