// The lists of environment variables each toolchain reads (kiln/toolchain_environment.h).
#include "kiln/toolchain_environment.h"

#include <algorithm>

#include <fmt/format.h>

#include "internal/files.h"
#include "kiln/error.h"
#include "kiln/settings.h"

namespace kiln {

EnvironmentList::EnvironmentList(std::string_view toolchain, std::vector<std::string_view> keyed,
                                 std::vector<std::string_view> finding)
    : toolchain_(toolchain), keyed_(std::move(keyed)), finding_(std::move(finding)) {}

std::optional<std::string> EnvironmentList::get(std::string_view name) const {
  auto listed = [&](const std::vector<std::string_view>& names) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  if (!listed(keyed_) && !listed(finding_)) {
    throw InvalidState(fmt::format(
        "the {} toolchain read the environment variable {}, which is not on its list of "
        "variables (src/toolchains/toolchain_environment.cc): add it there so that the cache "
        "key holds it",
        toolchain_, name));
  }
  // kiln's own settings through their reader (kiln/settings.h); a list may name other variables
  // of kiln's name space that are no setting (the tests' own).
  const std::span<const settings::Setting> rows = settings::table();
  if (std::any_of(rows.begin(), rows.end(),
                  [&](const settings::Setting& row) { return row.name == name; })) {
    return settings::text(name);
  }
  return internal::env(std::string(name).c_str());
}

std::vector<std::string> EnvironmentList::material() const {
  std::vector<std::string> material;
  for (std::string_view name : keyed_) {
    if (std::optional<std::string> value = get(name)) {
      material.push_back(fmt::format("{}={}", name, *value));
    }
  }
  return material;
}

namespace {

// `names` after the C/C++ compiler's own search paths, which every compiler driver kiln runs
// (gcc, clang, nvcc's host compiler, emcc, the NDK's clang) honours.
std::vector<std::string_view> with_compiler_search(std::vector<std::string_view> names) {
  names.insert(names.begin(),
               {"CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "LIBRARY_PATH", "SDKROOT"});
  return names;
}

}  // namespace

const EnvironmentList& cuda_environment() {
  // TVM_CUDA_COMPILE_MODE only picks the backend of TVM's callback, which the kernel's key holds
  // itself: keyed, a TVM process that sets it would miss every kernel kiln build compiled.
  static const EnvironmentList list(
      "cuda",
      with_compiler_search({"CUDA_PATH", "NVSHMEM_HOME", "TVM_CUDA_PTXAS_REG_LEVEL",
                            "TVM_CUDA_PTXAS_EXTRA_OPTS", "TVM_CUDA_NVRTC_EXTRA_OPTS",
                            "TVM_CUDA_NVCC_NO_FAST_MATH", "TVM_CUDA_NVRTC_NO_FAST_MATH",
                            "TVM_KERNEL_DEBUG", "TVM_KERNEL_DUMP", "KILN_NVRTC", "KILN_NVJITLINK"}),
      {"TVM_CUDA_COMPILE_MODE"});
  return list;
}

const EnvironmentList& cc_environment() {
  static const EnvironmentList list(
      "cc", with_compiler_search({"CXX", "CC", "TVM_WIN_CC", "TVM_WIN_TARGET"}), {"PATH"});
  return list;
}

const EnvironmentList& clang_environment() {
  static const EnvironmentList list("clang", with_compiler_search({}));
  return list;
}

const EnvironmentList& ndk_environment() {
  static const EnvironmentList list("ndk", with_compiler_search({"TVM_NDK_CC"}));
  return list;
}

const EnvironmentList& emcc_environment() {
  static const EnvironmentList list("emcc", with_compiler_search({"EMCC_CFLAGS", "TVM_HOME"}));
  return list;
}

const EnvironmentList& rocm_environment() {
  static const EnvironmentList list("rocm", with_compiler_search({"ROCM_PATH"}));
  return list;
}

std::vector<const EnvironmentList*> toolchain_environments() {
  return {&cuda_environment(), &cc_environment(),   &clang_environment(),
          &ndk_environment(),  &emcc_environment(), &rocm_environment()};
}

}  // namespace kiln
