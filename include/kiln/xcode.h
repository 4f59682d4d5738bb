// Apple toolchains through xcrun, as tvm.support.xcode: dylibs, Metal libraries, Core ML models.
// Every tool runs from an argument vector (the seed built a shell string for Metal): paths with
// spaces, quotes or ';' pass through untouched.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::xcode {

// `xcrun args...` and its output, trimmed. Throws ToolFailed("xcrun error:").
std::string xcrun(const std::vector<std::string>& args);

// clang (from `xcrun -sdk SDK -find clang`) -dynamiclib -arch ARCH -isysroot <sdk path>
// [-mios-version-min=V | -mmacosx-version-min=V] -o output objects. SDKs: macosx, iphoneos and
// iphonesimulator (these two default to 13.0, as the seed's); any other is InvalidArgument.
// macosx gets no version flag unless one is given, and then -mmacosx-version-min: the seed
// spells it -mios-version-min for every SDK, which makes clang build for iOS, and on macosx
// without a version passes an empty argument that clang takes for a missing file.
void create_dylib(const std::filesystem::path& output,
                  const std::vector<std::filesystem::path>& objects, const std::string& arch,
                  const std::string& sdk = "macosx",
                  const std::optional<std::string>& min_os_version = std::nullopt);

// `xcrun -sdk SDK metal -std=macos-metal2.3 (ios-metal2.3 for iOS SDKs) [minimum OS version]
// -O3 -c` to .air, then `xcrun -sdk SDK metallib` to a .metallib; returns its bytes (also written
// to `output` when given). The minimum OS version is as for create_dylib. A compile failure is
// ToolFailed carrying the compiler's output; an SDK other than macosx, iphoneos and
// iphonesimulator is InvalidArgument.
std::string compile_metal(const std::string& code, const std::filesystem::path& output = {},
                          const std::string& sdk = "macosx",
                          const std::optional<std::string>& min_os_version = std::nullopt);

// As the seed: the model, with the names of its inputs and outputs written into it
// (with_io_description), is saved as OUT_DIR/<model_name>.mlmodel, then `xcrun coremlcompiler
// compile OUT_DIR/<model_name>.mlmodel OUT_DIR`; returns OUT_DIR/<model_name>.mlmodelc, which
// must exist afterwards (FileNotFound otherwise). `model` is an existing .mlmodel file
// (FileNotFound otherwise; InvalidArgument when it is not a Core ML model); it may be the very
// file OUT_DIR/<model_name>.mlmodel.
std::filesystem::path compile_coreml(const std::filesystem::path& model,
                                     const std::string& model_name = "main",
                                     const std::filesystem::path& out_dir = ".");

// What the seed writes into a Core ML model for TVM's Core ML runtime, from the bytes of a
// .mlmodel (a protobuf CoreML.Specification.Model): `{"inputs": [NAMES], "outputs": [NAMES]}`,
// the model description's input and output feature names, as Python's json.dumps spells it.
// InvalidArgument when the bytes are not a protobuf message or a name is not UTF-8.
std::string coreml_io_description(std::string_view mlmodel);
// The model with coreml_io_description() as its metadata's short description (the seed's
// `model.short_description = json.dumps(...)`); every other field is kept as it was.
std::string with_io_description(std::string_view mlmodel);

// The seed's create_dylib.output_format.
inline constexpr const char* kDylibOutputFormat = "dylib";

}  // namespace kiln::xcode
