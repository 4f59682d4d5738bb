// matching_ptxas() and run_ptxas() (ptxas.h).
#include "ptxas.h"

#include <unistd.h>

#include <map>
#include <mutex>

#include <fmt/format.h>

#include "backends.h"
#include "internal/files.h"
#include "kiln/cuda.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "ptx_merge.h"

namespace kiln::cuda::internal {
namespace {

namespace fs = std::filesystem;

// The release line `ptxas --version` prints ("" when it would not run), asked once per file
// identity (a reinstalled ptxas is asked again).
std::string release_of(const fs::path& ptxas) {
  static std::mutex mutex;
  static auto* known = new std::map<std::string, std::string>;  // NOLINT: never destroyed
  std::string identity = file_stamp(ptxas);
  {
    std::lock_guard lock(mutex);
    if (auto it = known->find(identity); it != known->end()) return it->second;
  }
  std::string release;
  try {
    RunResult r = run({.argv = {ptxas.string(), "--version"}, .timeout = std::chrono::seconds(30)});
    size_t line = r.output.find("Cuda compilation tools");
    if (r.ok() && line != std::string::npos) {
      release = ptx_compiler_release("// " + r.output.substr(line));
    }
  } catch (const Error&) {
  }
  std::lock_guard lock(mutex);
  (*known)[identity] = release;
  return release;
}

}  // namespace

std::optional<fs::path> matching_ptxas(std::string_view ptx, std::string* why) {
  fs::path ptxas;
  try {
    ptxas = find_cuda_path() / "bin" / "ptxas";
  } catch (const Error& e) {
    *why = e.what();
    return std::nullopt;
  }
  if (::access(ptxas.c_str(), X_OK) != 0) {
    *why = "no executable " + ptxas.string();
    return std::nullopt;
  }
  std::string made_by = ptx_compiler_release(ptx);
  std::string release = release_of(ptxas);
  if (made_by.empty() || release != made_by) {
    *why = fmt::format("{} is of '{}', NVRTC's PTX of '{}'", ptxas.string(), release, made_by);
    return std::nullopt;
  }
  return ptxas;
}

std::optional<PtxasOutput> run_ptxas(const fs::path& ptxas, const std::string& ptx,
                                     const std::string& arch, const std::vector<std::string>& flags,
                                     std::string* why) {
  TempDirectory scratch;
  kiln::internal::write_file(scratch / "module.ptx", ptx);
  std::vector<std::string> argv = {ptxas.string(), "-arch=" + arch};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"module.ptx", "-o", "module.cubin"});
  RunResult r = run({.argv = std::move(argv), .cwd = scratch.path()});
  if (r.cancelled) throw Cancelled("ptxas cancelled");
  if (r.timed_out) {
    const RunScope* scope = RunScope::current();
    throw TimeoutError(fmt::format("ptxas timed out ({})", scope != nullptr
                                                               ? scope->limits().deadline_words()
                                                               : "the caller's deadline"));
  }
  if (!r.ok()) {
    *why = fmt::format("{} failed ({}): {}", r.command_line, r.status_text(), r.output);
    return std::nullopt;
  }
  return PtxasOutput{.cubin = kiln::internal::read_file(scratch / "module.cubin"), .log = r.output};
}

}  // namespace kiln::cuda::internal
