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

// The line that names the compiler that made `ptx` ("Cuda compilation tools, release 13.0,
// V13.0.88", from NVVM's comment at its top), or "" when it has none.
std::string ptx_compiler_release(std::string_view ptx);

}  // namespace kiln::cuda::internal
