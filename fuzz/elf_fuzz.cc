// Fuzz target: kiln::parse_elf_dynamic on arbitrary bytes. Every input must either parse or be
// refused with a kiln::InvalidArgument whose message names the input; any other exception, a
// crash, a hang or a sanitizer report is a bug. A parsed result must keep the documented
// invariants (no unnamed symbols).
//
//   cmake --workflow --preset fuzz                      # libFuzzer: builds, then a short smoke run
//   cd build/fuzz/fuzz && ./elf_fuzz -max_total_time=600 corpus/elf corpus/elf_seed
//   cd build/debug/fuzz && ./elf_fuzz_smoke -max_total_time=60 corpus/elf_seed   # no libFuzzer
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>
#include <string_view>

#include "kiln/elf_dynamic.h"
#include "kiln/error.h"

namespace {

constexpr std::string_view kOrigin = "fuzz input";

[[noreturn]] void fail(const char* what, const char* detail) {
  (void)std::fprintf(stderr, "elf_fuzz: %s: %s\n", what, detail);
  std::abort();
}

void check_symbols(const std::vector<kiln::ElfSymbol>& symbols) {
  for (const kiln::ElfSymbol& symbol : symbols) {
    if (symbol.name.empty()) fail("contract broken", "a symbol without a name");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    kiln::ElfDynamicInfo info = kiln::parse_elf_dynamic(std::span(data, size), kOrigin);
    check_symbols(info.undefined);
    check_symbols(info.defined);
  } catch (const kiln::InvalidArgument& e) {
    std::string_view message = e.what();
    if (!message.starts_with("'fuzz input'")) fail("message does not name the input", e.what());
  } catch (const std::exception& e) {
    fail("not an InvalidArgument", e.what());
  }
  return 0;
}
