// The Android NDK's standalone compiler, as tvm.support.ndk: $TVM_NDK_CC is the compiler (e.g.
// .../bin/aarch64-linux-android24-clang); llvm-ar, llvm-ranlib and llvm-nm come from its
// directory.
//
//   kiln::ndk::create_shared("libadd.so", {"add.o"});                // -shared -fPIC -lm
//   kiln::ndk::create_staticlib("libadd.a", {"add.o", "more.tar"});
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/process.h"
#include "kiln/recipe.h"

namespace kiln::ndk {

// $TVM_NDK_CC. Throws ToolNotFound with the seed's message when it is not set.
std::filesystem::path compiler();

// `$TVM_NDK_CC -o output objects... options...`; options default to -shared -fPIC -lm.
// Throws ToolFailed("Compilation error:").
RunResult create_shared(const std::filesystem::path& output,
                        const std::vector<std::filesystem::path>& objects,
                        const std::optional<std::vector<std::string>>& options = std::nullopt);

// `llvm-ar qcs` (.tar inputs unpacked first) then `llvm-ranlib`, both beside the compiler, into a
// temporary library moved to `output` once complete. Throws ToolFailed("AR error:" /
// "Ranlib error:").
RunResult create_staticlib(const std::filesystem::path& output,
                           const std::vector<std::filesystem::path>& inputs);

// The recipes of the two functions above (kiln/recipe.h): create_X(...) is
// perform(X_recipe(...)). A static library's tools are llvm-ar and llvm-ranlib beside the
// compiler; `scratch` (an existing directory that outlives perform()) holds the temporary
// library and the unpacked .tar inputs, unpacked now. Both throw ToolNotFound when TVM_NDK_CC is
// not set.
Recipe shared_recipe(const std::filesystem::path& output,
                     const std::vector<std::filesystem::path>& objects,
                     const std::optional<std::vector<std::string>>& options = std::nullopt);
Recipe staticlib_recipe(const std::filesystem::path& output,
                        const std::vector<std::filesystem::path>& inputs,
                        const std::filesystem::path& scratch);

// cc::get_global_symbol_section_map with the llvm-nm beside the compiler (or `nm`).
std::map<std::string, std::string> get_global_symbol_section_map(const std::filesystem::path& path,
                                                                 const std::string& nm = {});

// `$TVM_NDK_CC -dumpmachine`, or std::nullopt when that fails.
std::optional<std::string> get_target_triple();

// The output formats of create_shared and create_staticlib.
inline constexpr const char* kSharedFormat = "so";
inline constexpr const char* kStaticFormat = "a";

}  // namespace kiln::ndk
