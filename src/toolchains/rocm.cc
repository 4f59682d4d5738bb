#include "kiln/rocm.h"

#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "internal/files.h"
#include "kiln/clang.h"
#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "kiln/tool_identities.h"
#include "kiln/toolchain_environment.h"
#include "rocm_path.h"

namespace kiln::rocm {
namespace {

namespace fs = std::filesystem;

// The seed's device libraries, in its order.
constexpr std::string_view kBitcodeNames[] = {"oclc_daz_opt_on",
                                              "ocml",
                                              "irif",
                                              "oclc_correctly_rounded_sqrt_off",
                                              "oclc_correctly_rounded_sqrt_on",
                                              "oclc_daz_opt_off",
                                              "oclc_finite_only_off",
                                              "oclc_finite_only_on",
                                              "oclc_isa_version_803",
                                              "oclc_isa_version_900",
                                              "oclc_isa_version_906",
                                              "oclc_isa_version_1030",
                                              "oclc_unsafe_math_off",
                                              "oclc_unsafe_math_on",
                                              "oclc_wavefrontsize64_on",
                                              "oclc_abi_version_500"};

using internal::is_dir;
using internal::is_file;
using internal::read_file;

fs::path default_bitcode_dir() {
  std::vector<fs::path> candidates;
  try {
    candidates.push_back(find_rocm_path() / "amdgcn" / "bitcode");
  } catch (const Error&) {  // NOLINT(bugprone-empty-catch): no ROCm; distribution layouts next
  }
  candidates.emplace_back("/opt/rocm/amdgcn/bitcode");
  candidates.emplace_back("/opt/rocm/lib");
  for (const char* multiarch : {"x86_64-linux-gnu", "aarch64-linux-gnu", "powerpc64le-linux-gnu"}) {
    candidates.push_back(fs::path("/usr/lib") / multiarch / "amdgcn" / "bitcode");
  }
  for (const fs::path& dir : candidates) {
    if (is_file(dir / "ocml.bc") || is_file(dir / "ocml.amdgcn.bc")) return dir;
  }
  return "/opt/rocm/lib";  // the seed's last resort: the lookup below says what is missing
}

}  // namespace

std::vector<std::string> find_lld(const FindLldOptions& options) {
  std::vector<std::string> names;
  if (options.llvm_major) {
    names.push_back(fmt::format("ld.lld-{}.0", *options.llvm_major));
    names.push_back(fmt::format("ld.lld-{}", *options.llvm_major));
  }
  names.emplace_back("ld.lld");
  std::vector<std::string> candidates = names;
  for (const std::string& name : names) candidates.push_back("/opt/rocm/llvm/bin/" + name);
  std::vector<std::string> found;
  for (const std::string& candidate : candidates) {
    if (std::optional<fs::path> path = which(candidate)) found.push_back(path->string());
  }
  if (found.empty() && options.required) {
    std::string list;
    for (const std::string& c : candidates) list += (list.empty() ? "" : ", ") + c;
    throw ToolNotFound("ld.lld", "cannot find ld.lld, candidates are: [" + list + "]");
  }
  return found;
}

Recipe link_recipe(const fs::path& in, const fs::path& out, const std::string& lld) {
  std::string linker = lld.empty() ? find_lld().front() : lld;
  Recipe recipe{.tools = {{.what = "ld.lld", .program = linker}}, .inputs = {in}};
  recipe.steps.emplace_back(ToolStep{
      .label = "Linking error using ld.lld:",
      .run = {.argv = {linker, "--no-undefined", "-shared", in.string(), "-o", out.string()}}});
  return recipe;
}

void rocm_link(const fs::path& in, const fs::path& out, const std::string& lld) {
  perform(link_recipe(in, out, lld));
}

AmdgcnTools find_amdgcn_tools(const std::string& clang) {
  auto first = [](const std::vector<std::string>& found) {
    return found.empty() ? std::string() : found.front();
  };
  std::string any_lld = first(find_lld({.required = false}));
  if (!clang.empty()) return {clang, any_lld};
  for (int major : {19, 18, 17, 16, 15}) {
    std::optional<fs::path> versioned = which(fmt::format("clang-{}", major));
    std::vector<std::string> lld = find_lld({.required = false, .llvm_major = major});
    if (versioned && !lld.empty() && lld.front().find(std::to_string(major)) != std::string::npos) {
      return {versioned->string(), lld.front()};
    }
  }
  return {first(clang::find_clang({.required = false})), any_lld};
}

Recipe code_object_recipe(const fs::path& source, const fs::path& output,
                          const CodeObjectOptions& options) {
  AmdgcnTools tools = find_amdgcn_tools(options.clang);
  if (!options.lld.empty()) tools.lld = options.lld;
  if (tools.clang.empty()) tools.clang = "clang";  // not found: named, for the caller's message
  if (tools.lld.empty()) tools.lld = "ld.lld";
  std::string arch = options.arch.empty() ? get_rocm_arch().arch : options.arch;
  std::vector<std::string> argv{tools.clang,     "-target",   "amdgcn-amd-amdhsa",
                                "-mcpu=" + arch, "-nogpulib", "-O2"};
  if (options.language == SourceLanguage::opencl) {
    argv.insert(argv.end(), {"-x", "cl", "-cl-std=CL2.0", "-Xclang", "-finclude-default-header"});
  } else if (options.language == SourceLanguage::assembly) {
    argv.insert(argv.end(), {"-x", "assembler"});
  }
  Recipe recipe{.tools = {{.what = "clang (for the amdgcn target)", .program = tools.clang}},
                .inputs = {source},
                .key_material = rocm_environment().material()};
  for (const fs::path& library : options.device_libraries) {
    argv.insert(argv.end(), {"-Xclang", "-mlink-builtin-bitcode", "-Xclang", library.string()});
    recipe.key_material.push_back(ToolIdentities::of_file(library));
  }
  fs::path object =
      options.object.empty() ? fs::path(output).replace_extension(".o") : options.object;
  argv.insert(argv.end(), {"-c", source.string(), "-o", object.string()});
  argv.insert(argv.end(), options.options.begin(), options.options.end());
  recipe.steps.emplace_back(ToolStep{.label = "Compilation error:", .run = {.argv = argv}});
  Recipe link = link_recipe(object, output, tools.lld);
  recipe.tools.push_back(std::move(link.tools.front()));
  recipe.steps.push_back(std::move(link.steps.front()));
  return recipe;
}

std::string callback_rocm_link(std::string_view object_bytes, const std::string& lld) {
  TempDirectory temp;
  fs::path object = temp / "rocm_kernel.o";
  fs::path code_object = temp / "rocm_kernel.co";
  internal::write_file(object, object_bytes);
  rocm_link(object, code_object, lld);
  return read_file(code_object);
}

std::vector<fs::path> callback_rocm_bitcode_path(const fs::path& given) {
  fs::path dir = given.empty() ? default_bitcode_dir() : given;
  std::vector<fs::path> paths;
  for (std::string_view name : kBitcodeNames) {
    fs::path plain = dir / (std::string(name) + ".bc");
    fs::path amdgcn = dir / (std::string(name) + ".amdgcn.bc");
    if (is_file(plain)) {
      paths.push_back(plain);
    } else if (is_file(amdgcn)) {
      paths.push_back(amdgcn);
    } else if (name.find("isa_version") == std::string_view::npos && name != "irif") {
      throw FileNotFound(fmt::format("could not find bitcode {} ({}.bc or {}.amdgcn.bc in {})",
                                     name, name, name, dir.string()));
    }
  }
  return paths;
}

std::optional<std::string> parse_rocminfo(std::string_view output) {
  static const std::regex name(R"(Name:\s+(gfx\d+[a-zA-Z]*))");
  std::match_results<std::string_view::const_iterator> match;
  if (std::regex_search(output.begin(), output.end(), match, name)) return match[1].str();
  return std::nullopt;
}

RocmArch get_rocm_arch(const fs::path& given) {
  constexpr const char* kDefault = "gfx900";
  fs::path rocm = given;
  if (rocm.empty()) {
    try {
      rocm = find_rocm_path();
    } catch (const Error& e) {
      return {kDefault,
              fmt::format("ROCm not detected ({}), using default {}", e.what(), kDefault)};
    }
  }
  if (!is_dir(rocm)) {
    return {kDefault,
            fmt::format("ROCm not detected at {}, using default {}", rocm.string(), kDefault)};
  }
  fs::path rocminfo = rocm / "bin" / "rocminfo";
  try {
    RunResult result = run({.argv = {rocminfo.string()}, .timeout = std::chrono::seconds(30)});
    if (!result.ok()) {
      return {kDefault, fmt::format("{} failed ({}), using default {}", rocminfo.string(),
                                    result.status_text(), kDefault)};
    }
    if (std::optional<std::string> arch = parse_rocminfo(result.output)) return {*arch, ""};
    return {kDefault,
            fmt::format("{} listed no gfx agent, using default {}", rocminfo.string(), kDefault)};
  } catch (const CannotRunTool& e) {
    return {kDefault,
            fmt::format("Unable to execute rocminfo ({}), using default {}", e.what(), kDefault)};
  }
}

namespace detail {

fs::path find_rocm_path(const fs::path& default_root) {
  if (std::optional<std::string> path = rocm_environment().get("ROCM_PATH")) return *path;
  if (std::optional<fs::path> hipcc = which("hipcc")) {
    std::error_code ec;
    fs::path real = fs::canonical(*hipcc, ec);
    if (!ec) return real.parent_path().parent_path();
  }
  // As the seed: the default root only when it holds hipcc (an empty /opt/rocm left by an
  // uninstall, or one with only the runtime, is no ROCm to compile with).
  if (is_file(default_root / "bin" / "hipcc")) return default_root;
  throw FileNotFound(fmt::format(
      "Cannot find ROCm path: ROCM_PATH is not set, hipcc is not on PATH, and there is no {}",
      (default_root / "bin" / "hipcc").string()));
}

}  // namespace detail

fs::path find_rocm_path() { return detail::find_rocm_path("/opt/rocm"); }

bool have_matrixcore(std::string_view compute_version) {
  return cuda::parse_compute_version(compute_version).first >= 8;
}

}  // namespace kiln::rocm
