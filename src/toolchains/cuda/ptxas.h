// The toolkit's ptxas, for the PTX of a module compiled in parts (nvrtc_parallel.h): NVRTC runs
// the same assembler inside itself, so ptxas of the release that made the PTX, given the
// options NVRTC's would get, makes the same machine code.
//
//   if (auto ptxas = matching_ptxas(ptx, &why)) {
//     PtxasOutput out = run_ptxas(*ptxas, ptx, "sm_80", {"-v"});   // out.cubin, out.log
//   }
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::cuda::internal {

// <find_cuda_path()>/bin/ptxas when it is of exactly the release whose NVVM made `ptx` (the
// "Cuda compilation tools, release X.Y, VX.Y.Z" line of both; asked once per ptxas file and
// process), else std::nullopt with `why` said.
std::optional<std::filesystem::path> matching_ptxas(std::string_view ptx, std::string* why);

struct PtxasOutput {
  std::string cubin;
  std::string log;  // what ptxas printed (-v's resource lines)
};
// Assembles `ptx` for `arch` ("sm_80") with `flags` in a temporary directory, under the calling
// thread's RunScope. std::nullopt (and `why`) when ptxas failed; TimeoutError or Cancelled when
// the RunScope's deadline passed or it was cancelled.
std::optional<PtxasOutput> run_ptxas(const std::filesystem::path& ptxas, const std::string& ptx,
                                     const std::string& arch, const std::vector<std::string>& flags,
                                     std::string* why);

}  // namespace kiln::cuda::internal
