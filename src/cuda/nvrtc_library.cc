#include "cuda/nvrtc_library.h"

#include <dlfcn.h>
#include <sys/utsname.h>

#include <filesystem>
#include <mutex>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "kiln/cuda.h"
#include "kiln/error.h"

namespace kiln::cuda::internal {
namespace {

namespace fs = std::filesystem;

// The places to try, in order: a path, or a bare name for the dynamic linker's search.
std::vector<std::string> candidates() {
  const char* chosen = std::getenv("KILN_NVRTC");  // NOLINT(concurrency-mt-unsafe)
  if (chosen != nullptr && *chosen != '\0') return {chosen};
  std::vector<std::string> names;
  try {
    fs::path cuda = find_cuda_path();
    utsname uts{};
    std::string machine = ::uname(&uts) == 0 ? uts.machine : "x86_64";
    for (const fs::path& dir :
         {cuda / "lib64", cuda / "lib", cuda / "targets" / (machine + "-linux") / "lib"}) {
      names.push_back((dir / "libnvrtc.so").string());
    }
  } catch (const Error&) {  // NOLINT(bugprone-empty-catch): no toolkit; the linker may know one
  }
  for (const char* name : {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"}) {
    names.emplace_back(name);
  }
  return names;
}

template <typename Fn>
void bind(void* handle, const char* symbol, Fn*& slot, std::string& missing) {
  slot = reinterpret_cast<Fn*>(::dlsym(handle, symbol));
  if (slot == nullptr) missing += std::string(missing.empty() ? "" : ", ") + symbol;
}

std::optional<NvrtcLibrary> try_load(const std::string& name, std::string& why) {
  bool is_path = name.find('/') != std::string::npos;
  std::error_code ec;
  if (is_path && !fs::exists(name, ec)) {
    why = "no such file";
    return std::nullopt;
  }
  // Never unloaded: NVRTC keeps state that outlives any one program.
  void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = ::dlerror();
    why = error != nullptr ? error : "dlopen failed";
    return std::nullopt;
  }
  NvrtcLibrary lib;
  std::string missing;
  bind(handle, "nvrtcCreateProgram", lib.create_program, missing);
  bind(handle, "nvrtcCompileProgram", lib.compile_program, missing);
  bind(handle, "nvrtcDestroyProgram", lib.destroy_program, missing);
  bind(handle, "nvrtcGetProgramLogSize", lib.get_program_log_size, missing);
  bind(handle, "nvrtcGetProgramLog", lib.get_program_log, missing);
  bind(handle, "nvrtcGetPTXSize", lib.get_ptx_size, missing);
  bind(handle, "nvrtcGetPTX", lib.get_ptx, missing);
  bind(handle, "nvrtcGetCUBINSize", lib.get_cubin_size, missing);
  bind(handle, "nvrtcGetCUBIN", lib.get_cubin, missing);
  bind(handle, "nvrtcGetErrorString", lib.get_error_string, missing);
  bind(handle, "nvrtcVersion", lib.version, missing);
  bind(handle, "nvrtcGetNumSupportedArchs", lib.get_num_supported_archs, missing);
  bind(handle, "nvrtcGetSupportedArchs", lib.get_supported_archs, missing);
  if (!missing.empty()) {
    why = "lacks " + missing + " (an NVRTC older than CUDA 11.2?)";
    return std::nullopt;
  }
  Dl_info info{};
  lib.path = ::dladdr(reinterpret_cast<void*>(lib.version), &info) != 0 && info.dli_fname != nullptr
                 ? info.dli_fname
                 : name;
  return lib;
}

}  // namespace

const NvrtcLibrary& nvrtc() {
  static std::mutex mutex;
  static std::optional<NvrtcLibrary> loaded;
  std::lock_guard lock(mutex);
  if (loaded) return *loaded;
  std::string tried;
  for (const std::string& name : candidates()) {
    std::string why;
    if (std::optional<NvrtcLibrary> lib = try_load(name, why)) {
      loaded = std::move(lib);
      return *loaded;
    }
    tried += fmt::format("\n  {}: {}", name, why);
  }
  throw ToolNotFound("nvrtc",
                     "NVRTC (libnvrtc.so, from the CUDA toolkit) is not available; tried:" + tried +
                         "\nInstall the CUDA toolkit, set CUDA_PATH to it, or set KILN_NVRTC to "
                         "the library; the nvcc backend does not need NVRTC.");
}

std::string nvrtc_error(int result) {
  const char* text = nvrtc().get_error_string(result);
  return text != nullptr ? text : fmt::format("NVRTC error {}", result);
}

}  // namespace kiln::cuda::internal

namespace kiln::cuda {

std::pair<int, int> nvrtc_version() {
  int major = 0;
  int minor = 0;
  if (int r = internal::nvrtc().version(&major, &minor); r != 0) {
    throw Error("nvrtcVersion failed: " + internal::nvrtc_error(r));
  }
  return {major, minor};
}

std::vector<int> nvrtc_supported_archs() {
  const internal::NvrtcLibrary& lib = internal::nvrtc();
  int count = 0;
  if (int r = lib.get_num_supported_archs(&count); r != 0) {
    throw Error("nvrtcGetNumSupportedArchs failed: " + internal::nvrtc_error(r));
  }
  std::vector<int> archs(static_cast<std::size_t>(count));
  if (int r = lib.get_supported_archs(archs.data()); r != 0) {
    throw Error("nvrtcGetSupportedArchs failed: " + internal::nvrtc_error(r));
  }
  return archs;
}

}  // namespace kiln::cuda
