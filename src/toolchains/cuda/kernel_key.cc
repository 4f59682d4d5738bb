// The kernel cache's key (kiln/cuda.h: kernel_cache_key): the one key of a CUDA compile, whether
// compile_cuda, `kiln cuda compile` or a CUDA job of kiln build makes it, so that each is a hit
// for the others. Each backend's compile reads its own plan (NvccPlan, NvrtcPlan); the key is
// made from that same plan here, and nowhere else.
#include <fmt/format.h>

#include "backends.h"
#include "kiln/cache.h"
#include "kiln/cuda.h"
#include "kiln/toolchain_environment.h"
#include "nvrtc_library.h"

namespace kiln::cuda {
namespace internal {
namespace {

namespace fs = std::filesystem;

// Bumped when what a key is made of changes: an entry under the old rules is then a miss.
constexpr std::string_view kKernelKeyVersion = "kiln-kernel-1";

// `parts` (what the backend's compile is made of), each length-prefixed, with what every backend
// shares: the cuda toolchain's keyed environment variables and the working directory (relative
// -I directories and NVRTC's "..." includes are found from it), relative to the base directory.
std::string keyed(const Request& request, Backend backend, const std::vector<std::string>& parts) {
  const Cache& cache = *request.cache;
  std::string blob;
  for (const std::string& part : parts) blob += fmt::format("{}:{}", part.size(), part);
  return cache_key({kKernelKeyVersion, backend_name(backend), blob,
                    cache.relocated(joined_for_key(cuda_environment().material())),
                    working_directory_for_key(cache)});
}

// What identifies the compilers an nvcc drives: nvcc, cicc and ptxas beside it (their content,
// remembered in `memo`). Read from the files rather than asked of `nvcc --version`, a process
// that would cost every fresh `kiln cuda compile` ~20 ms.
std::string nvcc_identity(const std::string& nvcc, const Cache* memo) {
  fs::path bin = fs::path(nvcc).parent_path();
  return file_identity(nvcc, memo) + file_identity(bin / "ptxas", memo) +
         file_identity(bin.parent_path() / "nvvm" / "bin" / "cicc", memo);
}

}  // namespace

// Everything but the temporary paths decides the output: the command, nvcc's identity, the
// source, the user's file it names, and NVSHMEM's headers and device library.
std::string kernel_key(const Request& request, const NvccPlan& plan) {
  const Cache& cache = *request.cache;
  std::string nvshmem_lib;
  if (plan.nvshmem) {
    nvshmem_lib = file_identity(plan.nvshmem->lib_dir / "libnvshmem_device.a", &cache);
  }
  return keyed(
      request, Backend::nvcc,
      {nvcc_identity(plan.command.front(), &cache), cache.relocated(joined_for_key(plan.command)),
       request.code, plan.nvshmem ? plan.nvshmem->include_dir.string() : "", nvshmem_lib,
       cache.relocated(plan.source.key)});
}

// The source as NVRTC gets it (its #line names the user's file: relative to the base directory,
// as every path), every option, NVRTC's identity and version, and NVSHMEM's device library and
// nvJitLink, which link it.
std::string kernel_key(const Request& request, const NvrtcPlan& plan) {
  const Cache& cache = *request.cache;
  auto [major, minor] = nvrtc_version();
  std::string nvshmem_lib;
  if (request.nvshmem) {
    nvshmem_lib = file_identity(find_nvshmem_paths().lib_dir / "libnvshmem_device.a", &cache) +
                  file_identity(nvjitlink().path, &cache);
  }
  return keyed(
      request, Backend::nvrtc,
      {std::string(format_name(request.format)), plan.arch, cache.relocated(plan.prepared.text),
       cache.relocated(joined_for_key(plan.options)), file_identity(nvrtc().path, &cache),
       fmt::format("{}.{}", major, minor), nvshmem_lib});
}

}  // namespace internal

std::string kernel_cache_key(std::string_view code, const CompileOptions& options,
                             const Cache& cache) {
  internal::Request request = internal::request_of(code, options);
  request.cache = &cache;
  if (options.backend == Backend::nvcc) {
    // The directory of a copy of the code is no part of the key.
    return internal::kernel_key(request, internal::nvcc_plan(request, {}));
  }
  internal::NvrtcPlan plan = internal::plan_of(request);
  internal::with_source(plan, request);
  return internal::kernel_key(request, plan);
}

}  // namespace kiln::cuda
