// The compiler a kiln build job runs when its manifest names none, whether a tool is installed,
// and what a job's language means for the file an inline source is written to and for ROCm's
// compiler. prepare() (recipe.h) reads these while it chooses a job's recipe; a tool that is not
// here becomes the job's skip reason, in missing_tool()'s words.
//
//   std::string cc = c_compiler(job);   // job.cc, else TVM_NDK_CC, $CC, gcc, ...; or Absent
//   if (!installed(cc)) throw Absent{missing_tool("the C compiler", cc)};
//   fs::path inline_source = work_dir / (job.name + extension_of(job.language));   // "add.cc"
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kiln/manifest.h"
#include "kiln/rocm.h"

namespace kiln::build::detail {

// Why a job cannot run here, thrown while its recipe is chosen; prepare() makes it the job's
// skip reason.
struct Absent {
  std::string reason;
};

// The skip reason of an ndk job without TVM_NDK_CC.
inline constexpr const char* kNeedsNdkCc = "toolchain absent: the ndk toolchain needs TVM_NDK_CC";

// "toolchain absent: <what> (<name>) is not installed or not on PATH".
std::string missing_tool(std::string_view what, std::string_view name);

// Whether `program` can be run: a name found on PATH (as run() finds it, kiln::program_path), or
// a path to an executable file; false for "".
bool installed(const std::string& program);

// The C/C++ compiler of an object, shared or executable job: its "cc"; TVM_NDK_CC for the ndk
// toolchain (Absent{kNeedsNdkCc} without it); Xcode's clang; for C, $CC or the first of gcc, cc,
// clang; otherwise cc::get_cc() (C++ first); "cc" when there is none (reported as not installed).
std::string c_compiler(const Job& job);

// The extension an inline source of `language` is written with, so that the compiler takes it
// for that language: ".c" (also when there is no language), ".cc", ".cu", ".ll", ".S", ".cl".
std::string extension_of(const std::optional<Language>& language);

// The language ROCm's compiler is told: LLVM IR, assembly, else OpenCL.
rocm::SourceLanguage rocm_language(const std::optional<Language>& language);

}  // namespace kiln::build::detail
