// Emscripten for tvmjs, as tvm.support.emcc: link TVM's WebAssembly runtime libraries with the
// generated objects into one standalone .wasm module.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kiln/recipe.h"

namespace kiln::emcc {

// As the seed: every `name` found under <top>/web/dist/wasm and <top>/web/dist, in that order,
// where top is $TVM_HOME when it is set, else `root`: the TVM source tree's top directory (the
// seed's libinfo._dev_top_directory(), which the Python side passes; kiln alone knows none).
// When nothing is found: std::nullopt if `optional`, else FileNotFound ("Cannot find NAME;
// searched [DIRS]").
std::optional<std::vector<std::filesystem::path>> find_wasm_lib(
    const std::string& name, bool optional = false, const std::filesystem::path& root = {});

struct WasmOptions {
  std::vector<std::string> options{};  // after the objects
  std::string cc = "emcc";
  std::vector<std::filesystem::path> libs{};  // each must exist
  // Where the runtime libraries are looked for when $TVM_HOME is not set (find_wasm_lib).
  std::filesystem::path root{};
};

// `emcc -O3 -std=c++17 --no-entry -s WASM_BIGINT=1 -s ERROR_ON_UNDEFINED_SYMBOLS=0
// -s STANDALONE_WASM=1 -s ALLOW_MEMORY_GROWTH=1 -s TOTAL_MEMORY=160MB -o output` then the
// runtime libraries (wasm_runtime.bc unless an object is one, tvmjs_support.bc,
// webgpu_runtime.bc), `libs`, the objects and the options. Throws FileNotFound for a missing lib
// or runtime library, ToolFailed("Compilation error:") when emcc fails.
void create_tvmjs_wasm(const std::filesystem::path& output,
                       const std::vector<std::filesystem::path>& objects,
                       const WasmOptions& options = {});

// create_tvmjs_wasm's recipe (kiln/recipe.h): the libraries are found now (same errors), emcc
// runs when it is performed.
Recipe tvmjs_wasm_recipe(const std::filesystem::path& output,
                         const std::vector<std::filesystem::path>& objects,
                         const WasmOptions& options = {});

struct ModuleOptions {
  std::vector<std::string> options{};  // after the objects
  std::string cc = "emcc";
  bool cxx = false;             // the sources are C++: -std=c++17
  std::filesystem::path cwd{};  // where emcc runs; it writes temporaries beside the output there
};

// A standalone WebAssembly module without TVM's runtime (kiln build's "wasm" jobs): `emcc -O3
// --no-entry -s STANDALONE_WASM=1 -s ERROR_ON_UNDEFINED_SYMBOLS=0 -s ALLOW_MEMORY_GROWTH=1
// [-std=c++17] objects... options... -o output`, ToolFailed("Compilation error:") when it fails.
Recipe standalone_wasm_recipe(const std::filesystem::path& output,
                              const std::vector<std::filesystem::path>& objects,
                              const ModuleOptions& options = {});

// The seed's object_format for create_tvmjs_wasm.
inline constexpr const char* kObjectFormat = "bc";

}  // namespace kiln::emcc
