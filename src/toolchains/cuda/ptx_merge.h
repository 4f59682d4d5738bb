// One PTX module from the modules NVRTC made of the parts of one CUDA source (kernel_split.h),
// for ptxas to turn into the module's one cubin (nvrtc_parallel.h).
//
// Each part's PTX holds the same header (.version, .target, .address_size), the variables and
// functions the shared helpers gave it (the same text in every part that has them), and its own
// kernels. The merged module holds the header once, then each part's statements in order, each
// statement once: a variable of the helpers stays one variable, as in the whole module. Two
// different statements for one name are left for ptxas to refuse (the caller then compiles the
// source whole).
//
//   std::optional<std::string> ptx = merged_ptx({part0_ptx, part1_ptx});
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::cuda::internal {

// The merged module, or std::nullopt when the modules do not have the same header, a statement
// cannot be read (an unclosed brace, comment or string), or one is debug information (.file,
// .section: their numbering is per module).
std::optional<std::string> merged_ptx(const std::vector<std::string>& modules);

// The first name that `ptx` defines or declares at module scope (a variable in any state space, a
// function, a kernel) which NVVM derives from the program rather than from the source alone, or ""
// when there is none. Each part would give such an entity a name of its own: the merged module
// would hold one copy of it per part where the whole module holds one (a variable one kernel
// writes and another reads would be two variables), or its parts' entities would collide. Those
// names are
//  - the prefix of entities of internal linkage (an anonymous namespace's, a static function and
//    its static variables): _INTERNAL_<hash>_<length><program name>_<first kernel>, where the
//    first kernel is the program's first definition, which differs per part;
//  - LLVM's private globals (string literals of printf and assert: $str, $str$1, ...), numbered in
//    each program's own order: every name holding `$`;
//  - unnamed constants (__unnamed_1, ...), numbered likewise.
// Every other name is the source's (a C++ mangled name, or a static variable's own name), the same
// in every part and in the whole module, so the merge keeps each such entity once.
std::string program_dependent_name(std::string_view ptx);

// The line that names the compiler that made `ptx` ("Cuda compilation tools, release 13.0,
// V13.0.88", from NVVM's comment at its top), or "" when it has none.
std::string ptx_compiler_release(std::string_view ptx);

}  // namespace kiln::cuda::internal
