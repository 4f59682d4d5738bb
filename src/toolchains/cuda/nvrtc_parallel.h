// A CUDA module of many kernels compiled on every core, into the cubin one compile makes.
//
// NVRTC compiles one program on one core (it serializes compiles inside a process), and a model
// that TVM generates is one program: 16 kernels, 900 KB of CUDA, ~5 s. So a module whose kernels
// can be compiled apart (kernel_split.h) goes into groups of about equal size, one NVRTC program
// each (the module with the other groups' kernels left out), that kiln's compile server compiles
// at once (a forked child each, sharing its precompiled header), each to PTX; the PTX modules
// are merged (ptx_merge.h) and assembled by the toolkit's ptxas of NVRTC's own release with the
// options NVRTC's own ptxas gets (ptxas.h). NVVM compiles each kernel the same in a part as in
// the whole module (the PTX differs only in the numbering of branch labels) and ptxas assembles
// each kernel on its own, so every kernel's machine code (cuobjdump -sass) is the single
// compile's; the cubin differs only in the order of its sections. nvrtc_parallel_test checks this
// on modules TVM generates.
//
// The module is compiled whole instead (std::nullopt here) unless every condition holds: a cubin
// (not PTX), no NVSHMEM, no TVM_KERNEL_DUMP, KILN_NVRTC_SPLIT is not 0, every option is one of
// those known to concern only the front end and NVVM (ptxas_flags_if_splittable), the groups
// spare at least kMinSparedBytes of source beside the largest one (KILN_NVRTC_SPLIT=N: N bytes),
// the code neither prints nor asserts nor opens an anonymous namespace (kernel_split.h's
// unsplittable), a compile server takes every part, every part compiles, no part's PTX defines a
// name NVVM derives from the program (ptx_merge.h's program_dependent_name: an internal-linkage
// entity, named after the part's first kernel, or a numbered string), and a ptxas of NVRTC's
// release exists. So every name in the merged module is the source's, the same in each part and in
// the one compile, and a variable the kernels of two parts share is one variable (NVVM keeps each
// load of a __device__ variable a program never writes: the host may write it). A part that fails
// is compiled again as the whole module, so a compile error reads as it always did.
// KILN_SERVER_DEBUG=1 prints whether a module of several kernels was split, and why not.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "backends.h"

namespace kiln::cuda::internal {

// Splitting a module is worth it when its groups spare at least this much source (about 0.15 s of
// NVRTC's work) beside the largest group, and every group holds at least this much. 32 KiB splits
// an attention layer of four tensor-core matmuls (80 KB) in two: its compile took 0.42 x TVM's
// callback's time in parts, 0.57 x whole (python_tvm_cuda_bench's "attention", issue 46).
inline constexpr size_t kMinSparedBytes = size_t{32} << 10;

// The module of `request`, planned as `plan` (a cubin), compiled in parts at once; std::nullopt
// when it is to be compiled whole. CompileResult::programs says how many parts it was. Throws
// what compile_in_server throws for a part (the caller's deadline passed, it was cancelled, NVRTC
// crashed), and TimeoutError or Cancelled from ptxas.
std::optional<CompileResult> compile_in_parts(const Request& request, const NvrtcPlan& plan);

// The flags for ptxas that NVRTC options carry (each --ptxas-options=, -Xptxas), when every other
// option is one known to concern only the front end and NVVM; std::nullopt otherwise.
std::optional<std::vector<std::string>> ptxas_flags_if_splittable(
    const std::vector<std::string>& options);

}  // namespace kiln::cuda::internal
