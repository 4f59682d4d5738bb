// CUDA: compile kernels with nvcc or NVRTC, find the toolkit and its parts, and answer what a
// compute capability supports, as tvm.support.nvcc.
//
//   std::string cubin = kiln::cuda::compile_cuda(source, {.arch = "sm_90a"});   // NVRTC, cubin
//   std::string ptx = kiln::cuda::compile_cuda(
//       source, {.format = kiln::cuda::Format::ptx, .arch = "sm_80",
//                .backend = kiln::cuda::Backend::nvcc});
//
// NVRTC is loaded at run time (dlopen): kiln needs no CUDA to build or run, and asking for NVRTC
// where there is none is an Error naming every place it looked. The environment variables of the
// seed are honoured: TVM_CUDA_COMPILE_MODE, TVM_KERNEL_DUMP, TVM_KERNEL_DEBUG,
// TVM_CUDA_PTXAS_REG_LEVEL, TVM_CUDA_PTXAS_EXTRA_OPTS, TVM_CUDA_NVRTC_EXTRA_OPTS,
// TVM_CUDA_NVCC_NO_FAST_MATH, TVM_CUDA_NVRTC_NO_FAST_MATH (TVM's later name for NVRTC), CUDA_PATH,
// NVSHMEM_HOME; KILN_NVRTC names the NVRTC library to load.
#pragma once

#include <compare>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "kiln/enum_names.h"
#include "kiln/launcher.h"
#include "kiln/recipe.h"

namespace kiln {
class Cache;  // kiln/cache.h
}  // namespace kiln

namespace kiln::cuda {

enum class Backend { nvrtc, nvcc };
enum class Format { ptx, cubin, fatbin };

// Their names (kiln/enum_names.h), as the seed, kiln build's manifest and kiln cuda compile spell
// them.
inline constexpr EnumName<Backend> kBackendNames[] = {{Backend::nvrtc, "nvrtc"},
                                                      {Backend::nvcc, "nvcc"}};
static_assert(in_enum_order(kBackendNames, Backend::nvcc), "a name for every Backend");
inline constexpr EnumName<Format> kFormatNames[] = {
    {Format::ptx, "ptx"}, {Format::cubin, "cubin"}, {Format::fatbin, "fatbin"}};
static_assert(in_enum_order(kFormatNames, Format::fatbin), "a name for every Format");

// "nvrtc" / "nvcc"; anything else is InvalidArgument with the seed's message.
Backend backend_from_name(std::string_view name);
std::string_view backend_name(Backend backend);
// "ptx" / "cubin" / "fatbin"; anything else is InvalidArgument with the seed's message.
Format format_from_name(std::string_view name);
std::string_view format_name(Format format);

struct CompileOptions {
  // Default: format_of() (ptx with nvcc, cubin with NVRTC; always cubin with NVSHMEM).
  std::optional<Format> format{};
  // "sm_80", "sm_90a" or "compute_80" (NVRTC respells it for the format). Empty: the compute
  // capability of device 0 when a driver and a GPU are present, else an Error asking for one.
  std::string arch{};
  // Several targets in one nvcc compile, instead of `arch` (the seed's list-valued arch). Each
  // arch name ("sm_80", "sm_90a", "compute_90") becomes `-gencode arch=compute_XY,code=sm_XY`
  // (code=compute_XY for a compute_ name: PTX, for the driver to compile); anything else is
  // passed to nvcc as it is, as the seed passes its list ({"-gencode",
  // "arch=compute_80,code=sm_80", ...}). InvalidArgument with `arch` set too, and with NVRTC,
  // which makes one target, unless the list is one arch name (then it is the arch).
  std::vector<std::string> archs{};
  // Extra compiler options; with NVRTC, nvcc-only ones (-c, -O3, -std=..., -Xcompiler, ...) are
  // dropped as the seed does.
  std::vector<std::string> options{};
  // When set, the result is also written there (the seed's path_target).
  std::filesystem::path output{};
  // The file `code` was read from, when it was: "..." includes are looked up in its directory
  // first (as nvcc does for a file it is given), and messages name it and its lines.
  std::filesystem::path source_path{};
  Backend backend = Backend::nvrtc;
  // nvcc only: put in front of nvcc (sccache caches nvcc's steps and, with an sccache-dist
  // cluster configured, compiles them on build servers). Not keyed: it changes where a compile
  // runs, never what it makes. InvalidArgument with NVRTC, whose compile runs in this process.
  std::optional<Launcher> launcher{};
  // Look the result up in, and store it into, kiln's kernel cache (kiln/cache.h), under
  // kernel_cache_key() (the source as compiled, every option, backend, format, arch, the
  // compiler's identity and version and the environment variables that change the output), the
  // key kiln build's CUDA jobs are cached under too. KILN_NO_CACHE turns it off; so does
  // TVM_KERNEL_DUMP (a dump is wanted for its files). A cache that cannot be opened is not
  // used (CompileResult::warning says why) and the compile goes on without it.
  bool use_cache = true;
  // With use_cache: whether a stored result may be served. false stores what is compiled without
  // serving anything, for a caller that wants the compiler to run (and its log) whatever the
  // cache holds. (kiln build looks its CUDA jobs up itself, under kernel_cache_key().)
  bool cache_reads = true;
};

// The format a compile makes when none is asked for: ptx with nvcc, cubin with NVRTC. The one
// place that says so; everything else (the compile, kiln build's manifest default, `kiln cuda
// compile`'s output name) asks here or format_of().
Format default_format(Backend backend);
// The format compiling `code` with `options` makes: cubin for code that uses NVSHMEM (it is
// linked), else options.format, else default_format(options.backend).
Format format_of(std::string_view code, const CompileOptions& options);

// The compiled bytes: PTX text, a cubin or a fatbin. A compile error throws ToolFailed whose
// output holds the source and the compiler's log ("Compilation error:"); a missing compiler,
// NVRTC library or CUDA header directory throws an Error that says what was looked for; any
// other failing NVRTC or nvJitLink call throws LibraryCallFailed; a compile that succeeds but
// produces no bytes throws UnexpectedOutput("Compilation error: empty result is generated").
std::string compile_cuda(std::string_view code, const CompileOptions& options = {});

// What a compile gave besides its bytes.
struct CompileResult {
  std::string bytes;
  // The compiler's messages on success: warnings, ptxas -v's resource lines. Empty when the
  // result came from the cache.
  std::string log{};
  bool cached = false;           // served from kiln's kernel cache
  bool cached_remotely = false;  // ... and its remote level held it (docs/remote-cache.md)
  // NVRTC programs the source was compiled as: 1, or the parts of a module of many kernels that
  // kiln's compile server compiled at once and ptxas put into one cubin (each kernel's machine
  // code is the one compile's: KILN_NVRTC_SPLIT=0 compiles it as one). 0 from the cache.
  size_t programs = 1;
  // Why kiln's kernel cache was not used, when it was wanted but could not be opened (no HOME, a
  // read-only or unsafe directory: kiln/cache.h): the compile ran uncached. Else empty.
  std::string warning{};
  // NVRTC's compile as a command line, "nvrtc <options> <program name>": what NVRTC received
  // (also from the cache: what it would receive). Empty for nvcc, whose runs are processes that
  // kiln::RunScope records itself.
  std::string command_line{};
};
// compile_cuda, keeping the compiler's log and saying whether the cache served it.
CompileResult compile(std::string_view code, const CompileOptions& options = {});

// Compiles somewhere other than this process, for when kiln's compile server (which compiles each
// program in a child of its own) cannot take it (kiln build: a pool worker, so that a crashing
// NVRTC takes down only the worker): the code and the options (no output) in, the bytes out.
using NvrtcCall =
    std::function<CompileResult(std::string_view code, const CompileOptions& options)>;

// The key under which kiln's kernel cache (kiln/cache.h, through kiln/direct_cache.h) holds the
// result of compiling `code` with `options`, every path in it relative to `cache`'s base
// directory (Cache::relocated): what compile() looks up and stores when its cache's base
// directory is the same, and what kiln build caches a CUDA job under, so that a kernel either
// compiled is a hit for the other. Made of what the compile is made of, computed from the same
// plan: the source as the compiler gets it, every option it gets (so options NVRTC drops are
// none, and the backend, format and arch are in them), the compiler's identity (its files'
// content) and version, NVSHMEM's device library, the cuda toolchain's keyed environment
// variables (kiln/toolchain_environment.h) and the working directory; never a launcher, an
// output path or a temporary directory. Runs no compiler. Throws what compile() throws before
// it compiles: InvalidArgument (no arch and no GPU to ask, contradicting options), FileNotFound
// (no toolkit, no toolkit headers for NVRTC, no NVSHMEM), and as nvrtc_version() when NVRTC
// cannot be loaded.
std::string kernel_cache_key(std::string_view code, const CompileOptions& options,
                             const Cache& cache);

// compile_cuda as a recipe (kiln/recipe.h), for a caller that keys and caches the output itself:
// one in-process step that compiles `code` and writes the bytes to `options.output` (which must
// be set: InvalidArgument otherwise). With nvcc its tool is <cuda>/bin/nvcc (ToolNotFound when
// find_cuda_path() finds no toolkit), run by compile_cuda; with NVRTC the in-process tool
// "nvrtc <major>.<minor>" (ToolNotFound when NVRTC cannot be loaded), compiled in kiln's compile
// server, else through `nvrtc` when given, else in this process, and recorded in the caller's
// RunScope (kiln/process.h, record_in_process) as "nvrtc <the options NVRTC gets> <source_path>"
// with NVRTC's log. The key material holds the options and the environment variables the backends
// read. Only a ToolNotFound means a missing toolchain; any other error is something else gone
// wrong.
Recipe compile_recipe(std::string code, const CompileOptions& options, NvrtcCall nvrtc = {});

// The files outside the CUDA toolkit that compiling `code` with `options` reads (the headers it
// includes, through -I, -include and the like), for a cache that keys them. Both backends are
// asked of nvcc's own dependency output (-M): NVRTC has no dependency option. std::nullopt when
// they cannot be known (no nvcc; nvcc failed). Writes its temporaries into `scratch`.
std::optional<std::vector<std::filesystem::path>> headers_read(
    std::string_view code, const CompileOptions& options, const std::filesystem::path& scratch);

// The seed's tvm_callback_cuda_compile: TVM_CUDA_COMPILE_MODE (case-insensitive, default
// "nvrtc") picks NVRTC -> cubin or nvcc -> fatbin; anything else is InvalidArgument.
std::string tvm_callback_cuda_compile(std::string_view code, const std::string& arch = {});

// True when the source includes nvshmem.h or nvshmemx.h.
bool uses_nvshmem(std::string_view code);

// $CUDA_PATH; else two levels above the real path of nvcc on PATH; else /usr/local/cuda when it
// has bin/nvcc; else FileNotFound naming the three.
std::filesystem::path find_cuda_path();

struct CudaVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;
  std::string to_string() const;  // "13.0.88"
  bool operator==(const CudaVersion&) const = default;
  // Spelled out: clang-tidy 14 misreads a defaulted <=> (modernize-use-nullptr).
  std::strong_ordering operator<=>(const CudaVersion& other) const {
    return std::tie(major, minor, patch) <=> std::tie(other.major, other.minor, other.patch);
  }
};
// The toolkit's version: version.txt (its last token), Debian's lib/cuda/version.txt,
// version.json ("cuda": {"version": ...}), then `nvcc --version`. Empty path: find_cuda_path().
// Throws FileNotFound when there is neither a version file nor nvcc, CannotRunTool when nvcc
// cannot be started, UnexpectedOutput when a file or nvcc names no version.
CudaVersion get_cuda_version(const std::filesystem::path& cuda_path = {});
// The version a toolkit's files say (version.txt, lib/cuda/version.txt, version.json), or
// std::nullopt when it has none; UnexpectedOutput when one holds no version.
std::optional<CudaVersion> cuda_version_from_files(const std::filesystem::path& cuda_path);
// What `nvcc --version` says ("release 13.0, V13.0.88" -> 13.0.88); std::nullopt (and why) when
// nvcc cannot run or names no version.
std::optional<CudaVersion> nvcc_version(const std::filesystem::path& nvcc,
                                        std::string* why_not = nullptr);
// The newest CUDA version the installed driver supports (cuDriverGetVersion: 12020 -> 12.2.0);
// std::nullopt (and why) when there is no driver.
std::optional<CudaVersion> driver_cuda_version(std::string* why_not = nullptr);

struct NvshmemPaths {
  std::filesystem::path include_dir;  // holds nvshmem.h
  std::filesystem::path lib_dir;      // holds libnvshmem.a/.so, libnvshmem_device.a or host .so
};
// Roots $NVSHMEM_HOME, the CUDA path, /usr/local, /usr; include dirs include and
// include/nvshmem_*; lib dirs lib64, lib, lib/<machine>-linux-gnu, lib64/<machine>-linux-gnu;
// the first pair found. Else FileNotFound listing the roots and how to fix it.
NvshmemPaths find_nvshmem_paths();

// libdevice for compute capability `arch` (e.g. 80): <cuda>/nvvm/libdevice or Debian's
// lib/nvidia-cuda-toolkit/libdevice; CUDA 9.0-11.3 -> libdevice.10.bc; later, the
// libdevice.compute_N.10.bc with the largest N <= arch, or plain libdevice.10.bc.
std::filesystem::path find_libdevice_path(int arch);
// The seed's callback_libdevice_path: find_libdevice_path(arch), or "" when there is none (no
// toolkit, no libdevice for that arch): then `warning`, when given, is set to "Cannot find
// libdevice path: <why>", for the caller to show (the seed warns; kiln's library prints nothing).
std::string callback_libdevice_path(int arch, std::string* warning = nullptr);

// "sm_86" -> "8.6", "sm_90a" -> "9.0.a", "compute_80" -> "8.0". InvalidArgument when unparsable.
std::string compute_version_of_arch(std::string_view arch);
// From `arch` when given, else from device 0 (".a" appended for major >= 9), else InvalidArgument
// that says what was tried and asks for an arch such as -arch=sm_80.
std::string get_target_compute_version(std::string_view arch = {});
// "8.6" -> {8, 6}; "9.0.a" -> {9, 0}. InvalidArgument when unparsable.
std::pair<int, int> parse_compute_version(std::string_view compute_version);

bool have_fp16(std::string_view compute_version);        // 5.3, or major >= 6
bool have_int8(std::string_view compute_version);        // major >= 6
bool have_tensorcore(std::string_view compute_version);  // major >= 7
bool have_bf16(std::string_view compute_version);        // major >= 8
bool have_fp8(std::string_view compute_version);         // 8.9, or major >= 9
bool have_fp4(std::string_view compute_version);         // exactly 10.0
// CUDA >= 10.0; false when no toolkit is found or its version cannot be read (as the seed).
bool have_cudagraph();

// The compute capability of device 0 ("8.6"), through the CUDA driver when one is installed.
// std::nullopt when there is no driver or no device; `why_not` (if given) then says which.
std::optional<std::string> device_compute_version(std::string* why_not = nullptr);

// NVRTC's version and the architectures it can compile for (sm numbers, e.g. 75, 80, 90).
// Throw like compile_cuda when NVRTC cannot be loaded.
std::pair<int, int> nvrtc_version();
std::vector<int> nvrtc_supported_archs();
// Every target NVRTC compiles for, from nvrtc_supported_archs() and nvrtc_version() without
// compiling anything: each arch as "sm_XY", then its arch-specific variants where NVRTC has
// them: "sm_XYa" for 90 and up (NVRTC 12.0 and later), the family's "sm_XYf" for 100 and up
// (NVRTC 12.9 and later). Tests check each rule against real compiles. Throws as nvrtc_version.
std::vector<std::string> nvrtc_targets();
// The same rules for the given archs and NVRTC version.
std::vector<std::string> nvrtc_targets(const std::vector<int>& archs, std::pair<int, int> version);

}  // namespace kiln::cuda
