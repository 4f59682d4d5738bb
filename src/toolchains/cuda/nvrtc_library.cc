#include "nvrtc_library.h"

#include <dlfcn.h>
#include <sys/utsname.h>

#include <filesystem>
#include <mutex>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/toolchain_environment.h"

namespace kiln::cuda::internal {
namespace {

namespace fs = std::filesystem;

// The places to try for lib<stem>.so, in order: a path, or a bare name for the dynamic linker's
// search. `variable` names the library exactly when set.
std::vector<std::string> candidates(const char* variable, const std::string& stem) {
  if (std::optional<std::string> chosen = cuda_environment().get(variable)) return {*chosen};
  std::vector<std::string> names;
  try {
    fs::path cuda = find_cuda_path();
    utsname uts{};
    std::string machine = ::uname(&uts) == 0 ? uts.machine : "x86_64";
    for (const fs::path& dir :
         {cuda / "lib64", cuda / "lib", cuda / "targets" / (machine + "-linux") / "lib"}) {
      names.push_back((dir / ("lib" + stem + ".so")).string());
    }
  } catch (const Error&) {  // NOLINT(bugprone-empty-catch): no toolkit; the linker may know one
  }
  for (const char* suffix : {"", ".13", ".12", ".11.2"}) {
    names.push_back("lib" + stem + ".so" + suffix);
  }
  return names;
}

template <typename Fn>
void bind(void* handle, const char* symbol, Fn*& slot, std::string& missing) {
  slot = reinterpret_cast<Fn*>(::dlsym(handle, symbol));
  if (slot == nullptr) missing += std::string(missing.empty() ? "" : ", ") + symbol;
}

// dlopen, or nullptr with `why` set. Never unloaded: these libraries keep state that outlives
// any one call.
void* open(const std::string& name, std::string& why) {
  std::error_code ec;
  if (name.find('/') != std::string::npos && !fs::exists(name, ec)) {
    why = "no such file";
    return nullptr;
  }
  void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = ::dlerror();
    why = error != nullptr ? error : "dlopen failed";
  }
  return handle;
}

std::string loaded_path(void* symbol, const std::string& name) {
  Dl_info info{};
  return ::dladdr(symbol, &info) != 0 && info.dli_fname != nullptr ? info.dli_fname : name;
}

std::optional<NvrtcLibrary> try_nvrtc(const std::string& name, std::string& why) {
  void* handle = open(name, why);
  if (handle == nullptr) return std::nullopt;
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
  // CUDA 12.8 and later: optional.
  lib.set_pch_heap_size =
      reinterpret_cast<int (*)(std::size_t)>(::dlsym(handle, "nvrtcSetPCHHeapSize"));
  lib.path = loaded_path(reinterpret_cast<void*>(lib.version), name);
  return lib;
}

std::optional<NvJitLinkLibrary> try_nvjitlink(const std::string& name, std::string& why) {
  void* handle = open(name, why);
  if (handle == nullptr) return std::nullopt;
  NvJitLinkLibrary lib;
  std::string missing;
  bind(handle, "nvJitLinkCreate", lib.create, missing);
  bind(handle, "nvJitLinkDestroy", lib.destroy, missing);
  bind(handle, "nvJitLinkAddData", lib.add_data, missing);
  bind(handle, "nvJitLinkAddFile", lib.add_file, missing);
  bind(handle, "nvJitLinkComplete", lib.complete, missing);
  bind(handle, "nvJitLinkGetLinkedCubinSize", lib.get_linked_cubin_size, missing);
  bind(handle, "nvJitLinkGetLinkedCubin", lib.get_linked_cubin, missing);
  bind(handle, "nvJitLinkGetErrorLogSize", lib.get_error_log_size, missing);
  bind(handle, "nvJitLinkGetErrorLog", lib.get_error_log, missing);
  if (!missing.empty()) {
    why = "lacks " + missing;
    return std::nullopt;
  }
  lib.path = loaded_path(reinterpret_cast<void*>(lib.create), name);
  return lib;
}

// Loads the first candidate that works, once; throws ToolNotFound listing every failure.
template <typename Library, typename Try>
const Library& load_once(std::optional<Library>& loaded, std::mutex& mutex, const char* variable,
                         const std::string& stem, const std::string& what, Try try_one) {
  std::lock_guard lock(mutex);
  if (loaded) return *loaded;
  std::string tried;
  for (const std::string& name : candidates(variable, stem)) {
    std::string why;
    if (std::optional<Library> lib = try_one(name, why)) {
      loaded = std::move(lib);
      return *loaded;
    }
    tried += fmt::format("\n  {}: {}", name, why);
  }
  throw ToolNotFound(stem, fmt::format("{} (lib{}.so, from the CUDA toolkit) is not available; "
                                       "tried:{}\nInstall the CUDA toolkit, set CUDA_PATH to it, "
                                       "or set {} to the library.",
                                       what, stem, tried, variable));
}

}  // namespace

const NvrtcLibrary& nvrtc() {
  static std::mutex mutex;
  static std::optional<NvrtcLibrary> loaded;
  return load_once(loaded, mutex, "KILN_NVRTC", "nvrtc", "NVRTC", try_nvrtc);
}

const NvJitLinkLibrary& nvjitlink() {
  static std::mutex mutex;
  static std::optional<NvJitLinkLibrary> loaded;
  return load_once(loaded, mutex, "KILN_NVJITLINK", "nvJitLink", "nvJitLink", try_nvjitlink);
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
    throw LibraryCallFailed("nvrtcVersion", r, "nvrtcVersion failed: " + internal::nvrtc_error(r));
  }
  return {major, minor};
}

std::vector<int> nvrtc_supported_archs() {
  const internal::NvrtcLibrary& lib = internal::nvrtc();
  int count = 0;
  if (int r = lib.get_num_supported_archs(&count); r != 0) {
    throw LibraryCallFailed("nvrtcGetNumSupportedArchs", r,
                            "nvrtcGetNumSupportedArchs failed: " + internal::nvrtc_error(r));
  }
  std::vector<int> archs(static_cast<std::size_t>(count));
  if (int r = lib.get_supported_archs(archs.data()); r != 0) {
    throw LibraryCallFailed("nvrtcGetSupportedArchs", r,
                            "nvrtcGetSupportedArchs failed: " + internal::nvrtc_error(r));
  }
  return archs;
}

}  // namespace kiln::cuda
