// Which kernels of a CUDA module may be compiled apart, and the source of each part.
//
// TVM generates one CUDA source per module: helpers first (includes, macros, device functions,
// declarations of every kernel), then each kernel's definition, one after the other. A kernel is
// compiled on its own (NVVM optimizes it, ptxas allocates its registers) whatever else the
// module holds, so the kernels can be compiled as several NVRTC programs at once, each holding
// the helpers and some of the kernels (nvrtc_parallel.h puts them back into one cubin). That is
// only safe when nothing after the first kernel could make a part mean something else: so only a
// module whose tail holds nothing but __global__ definitions, declarations of __global__
// functions, comments and #pragma lines inside the kernels is split.
//
//   auto kernels = kernel_definitions(code);          // std::nullopt: compile it whole
//   for (const auto& group : balanced_groups(*kernels, 2)) {
//     std::string part = with_kernels_only(code, *kernels, group);   // same lines, fewer kernels
//   }
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::cuda::internal {

// A kernel's definition in the module's code: from its first word to its closing brace.
struct KernelSpan {
  size_t begin = 0;
  size_t end = 0;
  size_t size() const noexcept { return end - begin; }
};

// The definitions of the module's kernels in their order, when there are two or more at file
// scope and the code after the first one holds only more of them, declarations of __global__
// functions, comments and (inside a kernel) #pragma lines. std::nullopt for anything else: a
// helper, variable, namespace, template or preprocessor directive after the first kernel, a
// __global__ inside braces, a raw string, or code it cannot read (an unclosed brace, comment or
// literal).
std::optional<std::vector<KernelSpan>> kernel_definitions(std::string_view code);

// Why the module is compiled whole although its kernels can be told apart (kernel_definitions),
// when its code (not its comments, literals or preprocessor lines) says at once that the parts
// would not compile as the whole does: it prints or asserts (printf, vprintf, assert: NVVM names
// their strings $str, $str$1, ... in each program's own order) or opens an anonymous namespace
// (NVRTC names the entities in it after the program's first kernel). std::nullopt otherwise, and
// when kernel_definitions() finds no kernels to split. Only a shortcut: the parts' PTX is checked
// for such names whatever the code says (ptx_merge.h's program_dependent_name).
std::optional<std::string> unsplittable(std::string_view code);

// The kernels' indexes in at most `groups` groups of about equal size in bytes (the largest
// kernel goes to the group with the fewest bytes first); each group in source order, no group
// empty, the groups in the order of their first kernel. The same input gives the same groups.
std::vector<std::vector<size_t>> balanced_groups(const std::vector<KernelSpan>& kernels,
                                                 size_t groups);

// `code` without the kernels not in `keep` (indexes into `kernels`): each of them becomes as many
// empty lines as it had, so that every line that stays keeps its number.
std::string with_kernels_only(std::string_view code, const std::vector<KernelSpan>& kernels,
                              const std::vector<size_t>& keep);

}  // namespace kiln::cuda::internal
