#include "kiln/xcode.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "internal/files.h"
#include "kiln/error.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "kiln/text.h"

namespace kiln::xcode {
namespace {

namespace fs = std::filesystem;

bool is_ios(const std::string& sdk) { return sdk == "iphoneos" || sdk == "iphonesimulator"; }

void require_known_sdk(std::string_view what, const std::string& sdk) {
  if (sdk != "macosx" && !is_ios(sdk)) {
    throw InvalidArgument(
        fmt::format("{}: unsupported sdk '{}' (macosx, iphoneos or iphonesimulator)", what, sdk));
  }
}

// The seed's __get_min_os_version_cmd, less its two bugs (see create_dylib in xcode.h): iOS SDKs
// default to 13.0; macOS has none unless given.
std::optional<std::string> min_os_version_flag(const std::string& sdk,
                                               const std::optional<std::string>& version) {
  if (is_ios(sdk)) return "-mios-version-min=" + version.value_or("13.0");
  if (version) return "-mmacosx-version-min=" + *version;
  return std::nullopt;
}

}  // namespace

std::string xcrun(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"xcrun"};
  argv.insert(argv.end(), args.begin(), args.end());
  return std::string(trimmed(check("xcrun error:", {.argv = argv, .merge_stderr = false}).output));
}

void create_dylib(const fs::path& output, const std::vector<fs::path>& objects,
                  const std::string& arch, const std::string& sdk,
                  const std::optional<std::string>& min_os_version) {
  require_known_sdk("create_dylib", sdk);
  std::string clang = xcrun({"-sdk", sdk, "-find", "clang"});
  std::string sdk_path = xcrun({"-sdk", sdk, "--show-sdk-path"});
  std::vector<std::string> argv = {clang, "-dynamiclib", "-arch", arch, "-isysroot", sdk_path};
  if (auto flag = min_os_version_flag(sdk, min_os_version)) argv.push_back(*flag);
  argv.insert(argv.end(), {"-o", output.string()});
  for (const fs::path& object : objects) argv.push_back(object.string());
  check("Compilation error:", {.argv = argv});
}

std::string compile_metal(const std::string& code, const fs::path& output, const std::string& sdk,
                          const std::optional<std::string>& min_os_version) {
  require_known_sdk("compile_metal", sdk);
  TempDirectory temp;
  fs::path source = temp / "my_lib.metal";
  fs::path air = temp / "my_lib.air";
  fs::path metallib = temp / "my_lib.metallib";
  internal::write_file_atomically(source, code);
  std::string standard = is_ios(sdk) ? "-std=ios-metal2.3" : "-std=macos-metal2.3";
  std::vector<std::string> metal = {"xcrun", "-sdk", sdk, "metal", standard};
  if (auto flag = min_os_version_flag(sdk, min_os_version)) metal.push_back(*flag);
  metal.insert(metal.end(), {"-O3", "-c", source.string(), "-o", air.string()});
  check("Metal compilation error:", {.argv = metal});
  check("Metal library error:",
        {.argv = {"xcrun", "-sdk", sdk, "metallib", air.string(), "-o", metallib.string()}});
  std::string bytes = internal::read_file(metallib, "the tool wrote no");
  if (!output.empty()) internal::write_file_atomically(output, bytes);
  return bytes;
}

fs::path compile_coreml(const fs::path& model, const std::string& model_name,
                        const fs::path& out_dir) {
  std::error_code ec;
  if (!fs::is_regular_file(model, ec)) {
    throw FileNotFound(fmt::format("compile_coreml: no model at {}", model.string()));
  }
  // As the seed: the names of the inputs and outputs go into the model, saved beside the output.
  fs::path saved = out_dir / (model_name + ".mlmodel");
  internal::write_file_atomically(saved, with_io_description(internal::read_file(model)));
  check("Core ML compilation error:",
        {.argv = {"xcrun", "coremlcompiler", "compile", saved.string(), out_dir.string()}});
  fs::path compiled = out_dir / (model_name + ".mlmodelc");
  if (!fs::exists(compiled, ec)) {
    throw FileNotFound(fmt::format("coremlcompiler did not produce {}", compiled.string()));
  }
  return compiled;
}

}  // namespace kiln::xcode
