#include "kiln/libinfo.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kiln/callbacks.h"
#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/paths.h"
#include "kiln/text.h"
#include "kiln/toolchain_environment.h"
#include "kiln_build_info.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere

namespace kiln {
namespace fs = std::filesystem;
namespace {

const char* on_off(bool on) { return on ? "ON" : "OFF"; }

bool any_tool(std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) {
    if (which(name)) return true;
  }
  return false;
}

// The toolkit kiln::cuda would use, with its nvcc.
bool cuda_toolkit_found() {
  try {
    std::error_code ec;
    return fs::exists(cuda::find_cuda_path() / "bin" / "nvcc", ec);
  } catch (const Error&) {
    return false;
  }
}

bool rocm_device_libs_found() {
  std::error_code ec;
  for (const char* dir : {"/opt/rocm/amdgcn/bitcode", "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode",
                          "/usr/lib/aarch64-linux-gnu/amdgcn/bitcode"}) {
    if (fs::exists(fs::path(dir) / "ocml.bc", ec)) return true;
  }
  return false;
}

void apply_tvm_overrides(std::map<std::string, std::string>& options) {
  constexpr std::string_view kPrefix = "TVM_USE_";
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    size_t eq = entry.find('=');
    if (!entry.starts_with(kPrefix) || eq == std::string_view::npos || eq == kPrefix.size())
      continue;
    options[std::string(entry.substr(4, eq - 4))] = std::string(entry.substr(eq + 1));
  }
}

}  // namespace

std::map<std::string, std::string> libinfo() {
  std::map<std::string, std::string> options{
      {"BUILD_TYPE", KILN_BUILD_TYPE},
      {"GIT_COMMIT_HASH", KILN_GIT_COMMIT},
      {"INSTALL_PREFIX", KILN_INSTALL_PREFIX},
      {"KILN_VERSION", KILN_VERSION_STRING},
      {"SANITIZE", KILN_SANITIZE[0] != '\0' ? KILN_SANITIZE : "OFF"},
      {"USE_CCACHE", on_off(any_tool({"ccache"}))},
      {"USE_CLANG", on_off(any_tool({"clang", "clang++"}))},
      {"USE_CUDA", on_off(cuda_toolkit_found())},
      {"USE_DISTCC", on_off(any_tool({"distcc"}))},
      {"USE_EMSCRIPTEN", on_off(any_tool({"emcc"}))},
      {"USE_ICECC", on_off(any_tool({"icecc"}))},
      {"USE_LLD", on_off(any_tool({"ld.lld"}))},
      {"USE_LLVM", on_off(any_tool({"llvm-config"}))},
      {"USE_METAL", on_off(any_tool({"xcrun"}))},
      {"USE_NDK", on_off(ndk_environment().get("TVM_NDK_CC").has_value())},
      {"USE_ROCM", on_off(rocm_device_libs_found())},
      {"USE_SCCACHE", on_off(any_tool({"sccache"}))},
  };
  // The rest of tvm.support 0.27's keys, so that code written against TVM's dictionary finds
  // each of them: libraries and targets kiln drives no tool for (TVM_USE_<X> overrides them).
  for (const char* key :
       {"USE_CLML", "USE_CUDNN", "USE_CUTLASS", "USE_HEXAGON", "USE_NCCL", "USE_NNAPI_CODEGEN",
        "USE_NNAPI_RUNTIME", "USE_NVSHMEM", "USE_NVTX", "USE_OPENCL", "USE_VULKAN"}) {
    options.emplace(key, "OFF");
  }
  apply_tvm_overrides(options);
  return options;
}

Description describe() {
  Description d;
  d.version = KILN_VERSION_STRING;
  d.git_commit = KILN_GIT_COMMIT;
  d.compiler = fmt::format("{} {} ({})", KILN_CXX_COMPILER_ID, KILN_CXX_COMPILER_VERSION,
                           KILN_CXX_COMPILER_PATH);
  utsname u{};
  if (::uname(&u) == 0) {
    d.platform = {{"sysname", u.sysname},
                  {"nodename", u.nodename},
                  {"release", u.release},
                  {"version", u.version},
                  {"machine", u.machine}};
  }
  d.options = libinfo();
  return d;
}

std::string describe_text(const Description& d) {
  const auto& p = d.platform;
  auto field = [&p](const char* key) {
    auto it = p.find(key);
    return it != p.end() ? it->second : std::string("?");
  };
  return fmt::format(
      "kiln version {} (git {})\n"
      "Built with {}\n"
      "uname: {} {} {} {} {}\n"
      "Options:\n{}\n",
      d.version, d.git_commit, d.compiler, field("sysname"), field("nodename"), field("release"),
      field("version"), field("machine"), json_text(nlohmann::json(d.options), 2));
}

std::string describe_json(const Description& d) {
  nlohmann::json j{{"version", d.version},   {"git_commit", d.git_commit},
                   {"compiler", d.compiler}, {"platform", d.platform},
                   {"options", d.options},   {"callbacks", callbacks::names()}};
  return json_text(j, 2) + "\n";
}

}  // namespace kiln
