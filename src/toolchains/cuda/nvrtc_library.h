// NVRTC, loaded with dlopen on first use: kiln links no CUDA library, so it builds and runs where
// CUDA is absent, and only asking for NVRTC there is an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln::cuda::internal {

struct NvrtcLibrary {
  using Program = struct NvrtcProgram*;
  int (*create_program)(Program*, const char*, const char*, int, const char* const*,
                        const char* const*) = nullptr;
  int (*compile_program)(Program, int, const char* const*) = nullptr;
  int (*destroy_program)(Program*) = nullptr;
  int (*get_program_log_size)(Program, std::size_t*) = nullptr;
  int (*get_program_log)(Program, char*) = nullptr;
  int (*get_ptx_size)(Program, std::size_t*) = nullptr;
  int (*get_ptx)(Program, char*) = nullptr;
  int (*get_cubin_size)(Program, std::size_t*) = nullptr;
  int (*get_cubin)(Program, char*) = nullptr;
  const char* (*get_error_string)(int) = nullptr;
  int (*version)(int*, int*) = nullptr;
  int (*get_num_supported_archs)(int*) = nullptr;
  int (*get_supported_archs)(int*) = nullptr;
  int (*set_pch_heap_size)(std::size_t) = nullptr;  // nullptr before CUDA 12.8
  std::string path;                                 // the file that was loaded
};

// nvJitLink, for linking NVSHMEM's device library into an NVRTC cubin without a GPU or driver.
struct NvJitLinkLibrary {
  using Handle = struct NvJitLinkHandle*;
  int (*create)(Handle*, std::uint32_t, const char**) = nullptr;
  int (*destroy)(Handle*) = nullptr;
  int (*add_data)(Handle, int, const void*, std::size_t, const char*) = nullptr;
  int (*add_file)(Handle, int, const char*) = nullptr;
  int (*complete)(Handle) = nullptr;
  int (*get_linked_cubin_size)(Handle, std::size_t*) = nullptr;
  int (*get_linked_cubin)(Handle, void*) = nullptr;
  int (*get_error_log_size)(Handle, std::size_t*) = nullptr;
  int (*get_error_log)(Handle, char*) = nullptr;
  std::string path;
  static constexpr int kInputCubin = 1;    // NVJITLINK_INPUT_CUBIN
  static constexpr int kInputLibrary = 6;  // NVJITLINK_INPUT_LIBRARY
};

// The library, loaded once. $KILN_NVRTC names it exactly; otherwise libnvrtc.so from the CUDA
// toolkit (lib64, lib, targets/<machine>-linux/lib), then the dynamic linker's own search.
// Throws ToolNotFound naming every place tried (and why each failed).
const NvrtcLibrary& nvrtc();

// libnvJitLink.so, looked for like NVRTC ($KILN_NVJITLINK names it exactly).
const NvJitLinkLibrary& nvjitlink();

// NVRTC's text for a result code.
std::string nvrtc_error(int result);

}  // namespace kiln::cuda::internal
