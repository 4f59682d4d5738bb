// What compile_cuda hands to a backend, and what both backends share.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "internal/files.h"
#include "kiln/cache.h"
#include "kiln/cuda.h"
#include "kiln/direct_cache.h"
#include "kiln/toolchain_environment.h"
#include "nvrtc_source.h"

namespace kiln::cuda::internal {

struct Request {
  std::string code;
  Format format = Format::ptx;
  std::string arch;  // as the caller gave it; may be empty
  std::vector<std::string> options;
  bool nvshmem = false;
  const Cache* cache = nullptr;         // where results are looked up and stored; none: no caching
  bool cache_reads = true;              // CompileOptions::cache_reads
  std::filesystem::path source_path{};  // CompileOptions::source_path
  // CompileOptions::output: with TVM_KERNEL_DUMP and no output, nvcc's result stays in the dump
  // directory (the seed's tvm_kernels.<format>).
  std::filesystem::path output{};
  std::vector<std::string> archs{};    // CompileOptions::archs (nvcc only)
  std::optional<Launcher> launcher{};  // CompileOptions::launcher (nvcc only)
  // NVRTC: where the compile goes when kiln's compile server cannot take it (kiln build: a pool
  // worker, so that a crashing NVRTC never takes down the build); none: this process.
  std::function<CompileResult()> no_server{};
};

// The request for compiling `code` with `options`: what compile() runs, and what the header
// scan and the command line kiln build records read, so that all three agree. Throws
// InvalidArgument for options that contradict each other (arch and archs, several archs or a
// launcher with NVRTC).
Request request_of(std::string_view code, const CompileOptions& options);

// compile(), with NVRTC compiles that kiln's compile server cannot take made by `no_server`
// (given the code and the options less the output) instead of in this process.
CompileResult compile_or_elsewhere(std::string_view code, const CompileOptions& options,
                                   const NvrtcCall& no_server);

// A file as part of a cache key: its content (file_content_identity), so a reinstalled or
// upgraded compiler is a different one and the same one elsewhere is the same.
// `memo`: remembers the content's hash across processes (file_content_identity).
std::string file_identity(const std::filesystem::path& path, const Cache* memo = nullptr);
// A file as this machine knows it (path, size, modification time): for what is per machine
// (a compile server's address, a tool's remembered --version), never for a shared key.
std::string file_stamp(const std::filesystem::path& path);
// Joins strings with NUL bytes, for a cache key.
std::string joined_for_key(const std::vector<std::string>& parts);

CompileResult compile_with_nvrtc(const Request& request);

// What one NVRTC compile of a request is made of: the arch's spelling, the program's name and
// every option NVRTC gets, decided by plan_of() and nowhere else.
struct NvrtcPlan {
  std::string arch;      // as spelled_arch() gives it
  std::string name;      // program_name()
  NvrtcSource prepared;  // set by with_source()
  std::vector<std::string> options;
  std::vector<std::filesystem::path> toolkit_dirs;  // toolkit_include_dirs()
  bool cubin = true;
  std::optional<std::string> dump_dir;  // TVM_KERNEL_DUMP

  // "nvrtc <options> <name>": the compile as a person would type it, exactly what NVRTC gets
  // (less the precompiled header kiln's server may add, which changes no output).
  std::string command_line() const;
};
// The plan of `request` without its source (cheap: no header is read). Throws what
// spelled_arch() and nvrtc_options() throw (no arch and no GPU, no toolkit headers).
NvrtcPlan plan_of(const Request& request);
// `plan` with plan.prepared: the source NVRTC compiles (prepared_source()).
NvrtcPlan& with_source(NvrtcPlan& plan, const Request& request);
// NVRTC's log without the warnings located in the toolkit's own headers.
std::string users_log(const std::string& log);

// The files outside the toolkit that an NVRTC compile of `source` (the caller's `code` as NVRTC
// gets it) with `options` reads, from nvcc's dependency output (NVRTC has none; nvrtc_headers.cc
// says why this stands in): std::nullopt when they cannot be known (no nvcc, or it failed). None,
// without running nvcc, when `code` includes nothing: what kiln adds includes only the toolkit's.
// Writes its temporaries into `scratch`.
std::optional<std::vector<std::filesystem::path>> nvrtc_headers(
    std::string_view code, const std::string& source, const std::vector<std::string>& options,
    const std::filesystem::path& scratch, const std::filesystem::path& source_dir = {},
    bool nvrtc = true);
// The stored result of a compile, when `request` may be served one (cache_reads) and `direct`
// holds it: cached, with the level it came from.
std::optional<CompileResult> served_from(const DirectCache& direct, const Request& request);

// A cache key's part for the directory the compile runs in: relative include directories, and
// "..." includes of NVRTC, are found from it. Relative to the cache's base directory.
std::string working_directory_for_key(const Cache& cache);

// The name NVRTC gets for the program: the user's file (absolute) when known, else the seed's
// "tvm_kernels.cu".
std::string program_name(const Request& request);
// The source NVRTC compiles for `request` (nvrtc_source.h), `arch` as spelled_arch() gives it,
// `options` as nvrtc_options() gives them: only headers their include search finds in
// `toolkit_dirs` (toolkit_include_dirs()) move up into the header prefix.
struct NvrtcSource prepared_source(const Request& request, const std::string& arch,
                                   const std::vector<std::string>& options,
                                   const std::vector<std::filesystem::path>& toolkit_dirs);
// The NVRTC side, in parts (the benchmark drives the seed's layout through them too).
// The arch as NVRTC gets it: sm_ for a cubin, compute_ for PTX, from the device when empty.
std::string spelled_arch(const Request& request);
// -I for each of the toolkit's header directories (include, targets/<machine>-linux/include and
// its cccl); FileNotFound when none holds cuda_runtime.h.
std::vector<std::string> include_options(const std::filesystem::path& cuda);
// The directories of include_options(find_cuda_path()).
std::vector<std::filesystem::path> toolkit_include_dirs();
// Whether compiling `code` with `options` (as the user gave them) may read a header outside the
// toolkit (whose identity is keyed): a "..." include, a forced include (-include), or an <...>
// include that a user's include directory holds or that the toolkit does not. When false, a
// cache need not ask the compiler which headers it read.
// `nvrtc`: the includes are those NVRTC may compile (nvrtc_includes), not every one written.
bool reads_outside_toolkit(std::string_view code, const std::vector<std::string>& options,
                           bool nvrtc = false);
// Every option kiln passes to NVRTC for `request`, in the seed's order.
std::vector<std::string> nvrtc_options(const Request& request, const std::string& arch);
struct NvrtcOutput {
  std::string bytes;  // the cubin, or the PTX text
  std::string log;    // NVRTC's log (ptxas -v output included)
};
// What NVRTC's calls gave, before it is judged: `result` is the first failing call's result (0
// when all succeeded), `failed_call` names it unless it was nvrtcCompileProgram.
struct NvrtcAttempt {
  int result = 0;
  std::string failed_call;
  std::string bytes;
  std::string log;
};
// Compiles `source`, named `name` (NVRTC looks up "..." includes beside it), in this process.
NvrtcAttempt attempt_nvrtc(const std::string& source, const std::string& name,
                           const std::vector<std::string>& options, bool cubin);
// The output of a successful attempt; otherwise ToolFailed (a compile error, carrying `code`
// and the log) or LibraryCallFailed.
NvrtcOutput checked(const std::string& code, const std::vector<std::string>& options,
                    NvrtcAttempt attempt);
// `log` less each diagnostic whose first line `drop` picks (with the source line and caret that
// follow it, up to the blank line), and less NVRTC's remark on suppressing warnings when no
// warning is left.
std::string without_diagnostics(std::string_view log,
                                const std::function<bool(std::string_view)>& drop);
// The diagnostics of several logs (the parts of one module, nvrtc_parallel.h) in one: each block
// up to a blank line once, in the order first seen (every part repeats the helpers' warnings).
std::string merged_logs(const std::vector<std::string>& logs);
// NVRTC's notes about precompiled headers: kiln's business, not the user's.
bool is_pch_note(std::string_view line);
// A warning located in one of `toolkit_dirs` (cuda_fp8.hpp's deprecations and the like): nvcc
// does not show these (the toolkit's headers are system headers to it), and the user can do
// nothing about them.
bool is_toolkit_warning(std::string_view line, const std::vector<std::string>& toolkit_dirs);
// attempt_nvrtc then checked.
NvrtcOutput run_nvrtc(const std::string& code, const std::string& source,
                      const std::vector<std::string>& options, bool cubin,
                      const std::string& name = "tvm_kernels.cu");
CompileResult compile_with_nvcc(const Request& request);

// Where nvcc reads the code from, and what that adds to its command and to the cache key.
struct NvccSource {
  std::filesystem::path path{};
  // What is to be written at `path` before nvcc runs (a copy of the code); std::nullopt when nvcc
  // compiles the user's file in place.
  std::optional<std::string> copy{};
  // For a copy of the user's file: -I<its directory>, before the request's own options, so that
  // its "..." includes are found there first, as beside the file itself.
  std::vector<std::string> options{};
  // The user's file, whose name nvcc's messages (and -lineinfo) then carry; "" for none.
  std::string key{};
};
// What one nvcc compile of a request is made of, decided by nvcc_plan() and nowhere else: the
// compile and the kernel cache's key (kernel_key) read this one value.
struct NvccPlan {
  Format format = Format::ptx;        // the request's, or fatbin for a dump (the seed dumps SASS)
  std::optional<std::string> dump{};  // TVM_KERNEL_DUMP
  std::optional<NvshmemPaths> nvshmem{};
  std::string digits{};  // digits_of(): the one arch's, for a default -gencode and nvlink
  NvccSource source{};   // decided; a copy is written by the compile, not by nvcc_plan()
  // nvcc and its options, before -MD, -o and the input: nvcc_command().
  std::vector<std::string> command{};
};
// The plan of `request`, a copy of its code to go into `dir` (the dump directory instead when
// TVM_KERNEL_DUMP is set). Writes nothing; reads the user's file (is it the code?). Throws what
// find_nvshmem_paths() and arch_digits() throw.
NvccPlan nvcc_plan(const Request& request, const std::filesystem::path& dir);

// The kernel cache's key of a compile (kiln/cuda.h: kernel_cache_key), one for each backend's
// plan, both through the same rules: the source as the compiler gets it, every option, the
// compiler's identity (its files' content) and version, NVSHMEM's device library, the cuda
// toolchain's keyed environment variables and the working directory, every path relative to
// request.cache's base directory. request.cache must be set. `plan` of NVRTC: with its source
// (with_source).
std::string kernel_key(const Request& request, const NvccPlan& plan);
std::string kernel_key(const Request& request, const NvrtcPlan& plan);

// A non-empty environment variable of the cuda toolchain's list (kiln/toolchain_environment.h),
// the list its cache keys are made from.
inline std::optional<std::string> env(std::string_view name) {
  return cuda_environment().get(name);
}
// What ptxas gets from both backends: -v, --register-usage-level=<TVM_CUDA_PTXAS_REG_LEVEL or
// 10>, --warn-on-local-memory-usage, then the TVM_CUDA_PTXAS_EXTRA_OPTS words.
std::vector<std::string> ptxas_flags();
// "sm_90a" -> "90a", for -gencode and nvlink; the arch from the device when `arch` is empty.
std::string arch_digits(const std::string& arch);
// Whether `word` is an arch name (sm_80, sm_90a, compute_90, lto_80) rather than an nvcc argument.
bool is_arch_name(std::string_view word);
// The nvcc arguments for CompileOptions::archs.
std::vector<std::string> gencode_options(const std::vector<std::string>& archs);
// The six -U__CUDA_NO_{HALF,BFLOAT16,BFLOAT162}_{OPERATORS,CONVERSIONS}__ options.
const std::vector<std::string>& half_and_bfloat16_undefines();
// The machine name as the toolkit spells it in targets/<machine>-linux.
std::string machine();

}  // namespace kiln::cuda::internal
