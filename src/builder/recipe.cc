// prepare(): which tools a job needs and who they are, decided once per job (recipe.h).
#include "recipe.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/files.h"
#include "kiln/cc.h"
#include "kiln/clang.h"
#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/paths.h"
#include "kiln/rocm.h"
#include "kiln_build_info.h"

namespace kiln::build::detail {
namespace {

namespace fs = std::filesystem;

// Environment variables that change what a tool makes.
constexpr const char* kRelevantEnvironment[] = {"CC",
                                                "CXX",
                                                "CPATH",
                                                "C_INCLUDE_PATH",
                                                "CPLUS_INCLUDE_PATH",
                                                "LIBRARY_PATH",
                                                "CUDA_PATH",
                                                "TVM_CUDA_PTXAS_REG_LEVEL",
                                                "TVM_CUDA_PTXAS_EXTRA_OPTS",
                                                "TVM_NDK_CC",
                                                "ROCM_PATH",
                                                "EMCC_CFLAGS",
                                                "SDKROOT"};

std::string missing_tool(std::string_view what, std::string_view name) {
  return fmt::format("toolchain absent: {} ({}) is not installed or not on PATH", what, name);
}

bool installed(const std::string& program) {
  if (program.empty()) return false;
  return program.find('/') == std::string::npos ? which(program).has_value()
                                                : internal::is_file(program);
}

// The C/C++ compiler of an object, shared or executable job: its "cc"; TVM_NDK_CC for the ndk
// toolchain; Xcode's clang; for C, $CC or the first of gcc, cc, clang; otherwise cc::get_cc()
// (C++ first).
std::optional<std::string> c_compiler(const Job& job) {
  if (!job.cc.empty()) return job.cc;
  if (job.toolchain == Toolchain::ndk) return internal::env("TVM_NDK_CC");
  if (job.toolchain == Toolchain::xcode) return std::string("clang");  // Xcode's, on a Mac
  if (job.language == Language::c) {
    if (auto cc = internal::env("CC")) return cc;
    for (const char* name : {"gcc", "cc", "clang"}) {
      if (which(name)) return std::string(name);
    }
    return std::nullopt;
  }
  return cc::get_cc();
}

std::string first_clang(const Job& job) {
  if (!job.cc.empty()) return job.cc;
  std::vector<std::string> found = clang::find_clang({.required = false});
  return found.empty() ? "" : found.front();
}

std::string first_lld() {
  std::vector<std::string> found = rocm::find_lld({.required = false});
  return found.empty() ? "" : found.front();
}

// clang and ld.lld for amdgcn: of the newest LLVM that has both (the device libraries are
// bitcode of one LLVM, and an older clang cannot read them), else the job's cc and any ld.lld.
std::pair<std::string, std::string> rocm_tools(const Job& job) {
  if (!job.cc.empty()) return {job.cc, first_lld()};
  for (int major : {19, 18, 17, 16, 15}) {
    auto clang = which(fmt::format("clang-{}", major));
    auto lld = rocm::find_lld({.required = false, .llvm_major = major});
    if (clang && !lld.empty() && lld.front().find(std::to_string(major)) != std::string::npos) {
      return {clang->string(), lld.front()};
    }
  }
  return {first_clang(job), first_lld()};
}

bool compiles_c(JobKind kind) {
  return kind == JobKind::object || kind == JobKind::shared || kind == JobKind::executable;
}

// Builds one Recipe: each tool found once, a missing one turned into the skip reason.
class Preparer {
 public:
  Preparer(const Job& job, ToolIdentities& identities) : job_(job), identities_(identities) {}

  Recipe finish(const Options& options);
  void prepare_kind();

 private:
  // Records `program` in `role` when installed; otherwise the first missing tool is the reason.
  void need(const std::string& role, std::string_view what, const std::string& program) {
    if (!installed(program)) {
      skip(missing_tool(what, program.empty() ? std::string(what) : program));
      return;
    }
    recipe_.tools[role] = {program, identities_.of(program)};
  }
  void skip(std::string reason) {
    if (recipe_.skip_reason.empty()) recipe_.skip_reason = std::move(reason);
  }
  void prepare_c_compile();
  void prepare_static();
  void prepare_cuda();
  void prepare_rocm();

  const Job& job_;
  ToolIdentities& identities_;
  Recipe recipe_;
};

void Preparer::prepare_c_compile() {
  if (job_.toolchain == Toolchain::xcode) need("xcrun", "Xcode (xcrun)", "xcrun");
  std::optional<std::string> cc = c_compiler(job_);
  if (!cc && job_.toolchain == Toolchain::ndk) {
    skip("toolchain absent: the ndk toolchain needs TVM_NDK_CC");
    return;
  }
  need("compiler", job_.toolchain == Toolchain::ndk ? "the NDK compiler" : "the C/C++ compiler",
       cc.value_or("cc"));
}

void Preparer::prepare_static() {
  if (job_.toolchain == Toolchain::ndk) {
    std::optional<std::string> ndk_cc = internal::env("TVM_NDK_CC");
    if (!ndk_cc) return skip("toolchain absent: the ndk toolchain needs TVM_NDK_CC");
    recipe_.tools["compiler"] = {*ndk_cc, identities_.of(*ndk_cc)};
    return;
  }
  if (job_.toolchain == Toolchain::xcode) need("xcrun", "Xcode (xcrun)", "xcrun");
  need("compiler", "the archiver", "ar");
}

void Preparer::prepare_cuda() {
  if (job_.backend == cuda::Backend::nvcc) {
    try {
      need("compiler", "nvcc", (cuda::find_cuda_path() / "bin" / "nvcc").string());
    } catch (const Error& e) {
      skip(fmt::format("toolchain absent: {}", e.what()));
    }
    return;
  }
  try {
    auto [major, minor] = cuda::nvrtc_version();
    std::string version = fmt::format("nvrtc {}.{}", major, minor);
    recipe_.tools["nvrtc"] = {version, version};
  } catch (const Error& e) {
    skip(fmt::format("toolchain absent: NVRTC: {}", e.what()));
  }
}

void Preparer::prepare_rocm() {
  auto [clang, lld] = rocm_tools(job_);
  need("compiler", "clang (for the amdgcn target)", clang);
  need("linker", "ld.lld", lld);
  if (job_.language == Language::assembly) return;  // assembly links no device library
  try {
    recipe_.device_libraries = rocm::callback_rocm_bitcode_path();
  } catch (const Error& e) {
    skip(fmt::format("toolchain absent: ROCm device libraries: {}", e.what()));
  }
}

void Preparer::prepare_kind() {
  switch (job_.kind) {
    case JobKind::object:
    case JobKind::shared:
    case JobKind::executable:
      return prepare_c_compile();
    case JobKind::static_library:
      return prepare_static();
    case JobKind::llvm_ir:
      return need("compiler", "clang", first_clang(job_));
    case JobKind::cuda:
      return prepare_cuda();
    case JobKind::rocm_code_object:
      return prepare_rocm();
    case JobKind::wasm:
      return need("compiler", "Emscripten", job_.cc.empty() ? "emcc" : job_.cc);
    case JobKind::tar: {
      std::string version = std::string("kiln tar ") + KILN_VERSION_STRING;
      recipe_.tools["tar"] = {version, version};
      return;
    }
  }
}

Recipe Preparer::finish(const Options& options) {
  std::string launcher = job_.launcher.empty() ? options.launcher : job_.launcher;
  if (compiles_c(job_.kind) && !launcher.empty()) {
    need("launcher", launcher, launcher);
    if (recipe_.tools.contains("launcher")) recipe_.launcher = Launcher::named(launcher);
  }
  nlohmann::json material = {
      {"kind", kind_name(job_.kind)},
      {"language", job_.language ? language_name(*job_.language) : ""},
      {"options", job_.options},
      {"toolchain", toolchain_name(job_.toolchain)},
      {"arch", job_.arch},
      {"format", job_.kind == JobKind::cuda ? cuda::format_name(job_.format) : ""},
      {"backend", job_.kind == JobKind::cuda ? cuda::backend_name(job_.backend) : ""}};
  for (const auto& [role, tool] : recipe_.tools) material["tools"][role] = tool.identity;
  for (const fs::path& library : recipe_.device_libraries) {
    material["device_libraries"].push_back(ToolIdentities::of_file(library));
  }
  nlohmann::json environment = nlohmann::json::object();
  for (const char* name : kRelevantEnvironment) {
    if (auto value = internal::env(name)) environment[name] = *value;
  }
  material["environment"] = environment;
  recipe_.key_material = material.dump();
  return std::move(recipe_);
}

}  // namespace

const std::string& Recipe::program(const std::string& role) const {
  static const std::string kNone;
  auto it = tools.find(role);
  return it == tools.end() ? kNone : it->second.program;
}

Recipe prepare(const Job& job, const Options& options, ToolIdentities& tools) {
  Preparer preparer(job, tools);
  preparer.prepare_kind();
  return preparer.finish(options);
}

}  // namespace kiln::build::detail
