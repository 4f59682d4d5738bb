// clang and LLVM IR, as tvm.support.clang.
//
//   std::vector<std::string> clangs = kiln::clang::find_clang();   // e.g. {"/usr/bin/clang-14",
//   ...} std::string ir = kiln::clang::create_llvm({"int add(int a, int b) { return a + b; }"});
//   std::string from_file = kiln::clang::create_llvm({"kernel.c"}, {.output = "kernel.ll"});
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kiln/recipe.h"

namespace kiln::clang {

struct FindOptions {
  // Throw when nothing is found (the message lists every candidate tried).
  bool required = true;
  // The LLVM major version to prefer (clang-<M>.0, clang-<M>); std::nullopt: the one kiln was
  // built with when kiln was built by clang, else none.
  std::optional<int> llvm_major{};
};

// Every clang found on PATH, in the order clang-<M>.0, clang-<M>, clang, clang.exe.
std::vector<std::string> find_clang(const FindOptions& options = {});

struct LlvmOptions {
  // Where the IR goes; empty: a temporary file, removed after it was read.
  std::filesystem::path output{};
  std::vector<std::string> options{};
  // The clang to use; empty: the first of find_clang().
  std::string cc{};
};

// `clang -S -emit-llvm options -o output inputs` and returns the IR text. Each input that
// is_source_path() is passed as a file; any other is inline source, written to input<i>.cc in a
// temporary directory. Throws ToolFailed("Compilation error: ...").
std::string create_llvm(const std::vector<std::string>& inputs, const LlvmOptions& options = {});

// create_llvm's recipe (kiln/recipe.h), without reading the IR back: the clang resolved once,
// inline inputs written to `scratch`/input<i>.cc by steps of their own, and the output at
// `options.output`, else `scratch`/output.ll. `scratch` must exist until perform() returns.
// Throws ToolNotFound when no clang is found.
Recipe llvm_recipe(const std::vector<std::string>& inputs, const LlvmOptions& options,
                   const std::filesystem::path& scratch);

}  // namespace kiln::clang
