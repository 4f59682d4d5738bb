// The compilers of kiln build's jobs and whether tools are installed (compilers.h).
#include "compilers.h"

#include <fmt/format.h>

#include "internal/files.h"
#include "kiln/cc.h"
#include "kiln/error.h"
#include "kiln/paths.h"
#include "kiln/toolchain_environment.h"

namespace kiln::build::detail {

std::string missing_tool(std::string_view what, std::string_view name) {
  return fmt::format("toolchain absent: {} ({}) is not installed or not on PATH", what, name);
}

bool installed(const std::string& program) {
  if (program.empty()) return false;
  try {
    (void)program_path({.argv = {program}});  // where run() finds it: never ./program first
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::string c_compiler(const Job& job) {
  if (!job.cc.empty()) return job.cc;
  if (job.toolchain == Toolchain::ndk) {
    if (auto cc = ndk_environment().get("TVM_NDK_CC")) return *cc;
    throw Absent{kNeedsNdkCc};
  }
  if (job.toolchain == Toolchain::xcode) return "clang";  // Xcode's, on a Mac
  if (job.language == Language::c) {
    if (auto cc = cc_environment().get("CC")) return *cc;
    for (const char* name : {"gcc", "cc", "clang"}) {
      if (installed(name)) return name;
    }
    return "cc";
  }
  return cc::get_cc().value_or("cc");
}

std::string extension_of(const std::optional<Language>& language) {
  switch (language.value_or(Language::c)) {
    case Language::c:
      return ".c";
    case Language::cxx:
      return ".cc";
    case Language::cuda:
      return ".cu";
    case Language::llvm_ir:
      return ".ll";
    case Language::assembly:
      return ".S";
    case Language::opencl:
      break;
  }
  return ".cl";
}

rocm::SourceLanguage rocm_language(const std::optional<Language>& language) {
  if (language == Language::llvm_ir) return rocm::SourceLanguage::llvm_ir;
  if (language == Language::assembly) return rocm::SourceLanguage::assembly;
  return rocm::SourceLanguage::opencl;
}

}  // namespace kiln::build::detail
