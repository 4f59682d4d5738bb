// The environment variables each toolchain reads, one list per toolchain. A toolchain reads its
// variables only through its list (get() refuses a name not on it), and its recipes' key material
// comes from the same list (material()), so a variable cannot change an output without changing
// its cache key.
//
//   std::optional<std::string> level = kiln::cuda_environment().get("TVM_CUDA_PTXAS_REG_LEVEL");
//   recipe.key_material = kiln::cuda_environment().material();  // {"TVM_CUDA_...=12", ...}
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

class EnvironmentList {
 public:
  // `keyed`: variables whose value changes what the tools make. `finding`: variables read only to
  // find a program (PATH), whose choice the key holds as that program's identity instead.
  EnvironmentList(std::string_view toolchain, std::vector<std::string_view> keyed,
                  std::vector<std::string_view> finding = {});

  // The variable's value; std::nullopt when unset or empty. Throws InvalidState when `name` is
  // not on this list: a variable read behind the key's back.
  std::optional<std::string> get(std::string_view name) const;
  // "NAME=value" for each keyed variable that is set, in the list's order.
  std::vector<std::string> material() const;

  std::string_view toolchain() const noexcept { return toolchain_; }
  const std::vector<std::string_view>& keyed() const noexcept { return keyed_; }
  const std::vector<std::string_view>& finding() const noexcept { return finding_; }

 private:
  std::string_view toolchain_;
  std::vector<std::string_view> keyed_;
  std::vector<std::string_view> finding_;
};

// kiln::cuda (NVRTC and nvcc, NVSHMEM, the NVRTC library, dumps and debug builds).
const EnvironmentList& cuda_environment();
// kiln::cc: the C/C++ compiler, its search paths and the compiler choice.
const EnvironmentList& cc_environment();
// kiln::clang (LLVM IR).
const EnvironmentList& clang_environment();
// kiln::ndk (the Android NDK's compiler).
const EnvironmentList& ndk_environment();
// kiln::emcc (Emscripten).
const EnvironmentList& emcc_environment();
// kiln::rocm.
const EnvironmentList& rocm_environment();
// Every list above.
std::vector<const EnvironmentList*> toolchain_environments();

}  // namespace kiln
