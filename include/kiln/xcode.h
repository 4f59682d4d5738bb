// Apple toolchains through xcrun, as tvm.support.xcode: dylibs, Metal libraries, Core ML models.
// Every tool runs from an argument vector (the seed built a shell string for Metal): paths with
// spaces, quotes or ';' pass through untouched.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kiln::xcode {

// `xcrun args...` and its output, trimmed. Throws ToolFailed("xcrun error:").
std::string xcrun(const std::vector<std::string>& args);

// clang (from `xcrun -sdk SDK -find clang`) -dynamiclib -arch ARCH -isysroot <sdk path>
// [-mios-version-min=V | -mmacosx-version-min=V] -o output objects. SDKs: macosx, iphoneos and
// iphonesimulator (these two default to 13.0); any other is InvalidArgument.
void create_dylib(const std::filesystem::path& output,
                  const std::vector<std::filesystem::path>& objects, const std::string& arch,
                  const std::string& sdk = "macosx",
                  const std::optional<std::string>& min_os_version = std::nullopt);

// `xcrun -sdk SDK metal -std=macos-metal2.3 (ios-metal2.3 for iOS SDKs) -O3 -c` to .air, then
// `xcrun -sdk SDK metallib` to a .metallib; returns its bytes (also written to `output` when
// given). A compile failure is ToolFailed carrying the compiler's output.
std::string compile_metal(const std::string& code, const std::filesystem::path& output = {},
                          const std::string& sdk = "macosx");

// `xcrun coremlcompiler compile MODEL OUT_DIR`; returns OUT_DIR/<model_name>.mlmodelc, which must
// exist afterwards. `model` is an existing .mlmodel file (FileNotFound otherwise).
std::filesystem::path compile_coreml(const std::filesystem::path& model,
                                     const std::string& model_name = "main",
                                     const std::filesystem::path& out_dir = ".");

}  // namespace kiln::xcode
