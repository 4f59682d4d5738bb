// The NVRTC backend: the seed's source filtering, preamble and options, through the NVRTC library
// loaded at run time.
#include <cctype>
#include <sstream>

#include <fmt/format.h>

#include "backends.h"
#include "internal/files.h"
#include "internal/shell_words.h"
#include "kiln/cuda.h"
#include "kiln/cuda_messages.h"
#include "kiln/direct_cache.h"
#include "kiln/error.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "nvrtc_library.h"
#include "nvrtc_parallel.h"
#include "nvrtc_pch.h"
#include "nvrtc_server.h"
#include "nvrtc_source.h"

namespace kiln::cuda::internal {
namespace {

namespace fs = std::filesystem;

// Options nvcc takes and NVRTC refuses, dropped from the user's options.
constexpr std::string_view kNvccOnly[] = {
    "-c",        "-O",       "-std",    "--std",     "-Xcompiler",         "-Xlinker",
    "-Xarchive", "-Xcudafe", "-Xptxas", "--compile", "--compiler-options", "--linker-options",
    "-fPIC",     "-shared",  "-o"};

bool nvcc_only(std::string_view option) {
  for (std::string_view prefix : kNvccOnly) {
    if (option.starts_with(prefix)) return true;
  }
  return false;
}

// "sm_90a" for a cubin, "compute_90a" for PTX: the spelling follows the format.
}  // namespace

std::string spelled_arch(const Request& request) {
  std::string arch = request.arch.empty() ? "sm_" + arch_digits("") : request.arch;
  (void)compute_version_of_arch(arch);  // refuses what is not an arch
  std::string digits = arch.substr(arch.find('_') + 1);
  return (request.format == Format::ptx ? "compute_" : "sm_") + digits;
}

std::vector<std::string> include_options(const fs::path& cuda) {
  fs::path targets = cuda / "targets" / (machine() + "-linux") / "include";
  std::vector<fs::path> dirs;
  std::error_code ec;
  for (const fs::path& dir : {cuda / "include", targets, targets / "cccl"}) {
    if (fs::is_directory(dir, ec)) dirs.push_back(dir);
  }
  bool has_runtime = false;
  std::string searched;
  for (const fs::path& dir : dirs) {
    has_runtime = has_runtime || fs::exists(dir / "cuda_runtime.h", ec);
    searched += (searched.empty() ? "" : ", ") + dir.string();
  }
  if (!has_runtime) {
    throw FileNotFound(fmt::format(
        "Cannot find CUDA headers in {}. Searched in: [{}]. Please ensure CUDA is properly "
        "installed.",
        cuda.string(), searched));
  }
  std::vector<std::string> options;
  for (const fs::path& dir : dirs) options.push_back("-I" + dir.string());
  return options;
}

// No --minimal (NVRTC's "omit texture, surface and cudadevrt declarations"): measured on the 21
// TVM 0.27 kernels of bench/cuda_tvm_corpus.py (bench/nvrtc_minimal_ab.py, sm_80/sm_90, NVRTC 13,
// 2026-12-07) it left every function's SASS unchanged but saved only 1.6% of a compile's CPU time
// in process (median minimal/plain 0.984, 0.893..1.013 per kernel; wall 0.987) and 3% served
// from the compile server's PCH (0.966, within the loaded machine's noise): the headers TVM
// includes and the back end dominate. Not worth the second compile a kernel that needs what it
// omits would pay, nor a PCH and a cache key per variant.
std::vector<std::string> nvrtc_options(const Request& request, const std::string& arch) {
  std::vector<std::string> options = {"--gpu-architecture=" + arch, "-default-device",
                                      "--device-int128"};
  if (request.nvshmem) options.emplace_back("-rdc=true");
  std::vector<std::string> includes = include_options(find_cuda_path());
  options.insert(options.end(), includes.begin(), includes.end());
  if (request.nvshmem) options.push_back("-I" + find_nvshmem_paths().include_dir.string());
  for (const char* silence :
       {"-D__NV_SILENCE_DEPRECATION_BEGIN=", "-D__NV_SILENCE_DEPRECATION_END=",
        "-D__NV_SILENCE_HOST_DEPRECATION_BEGIN=", "-D__NV_SILENCE_HOST_DEPRECATION_END="}) {
    options.emplace_back(silence);
  }
  const auto& undefines = half_and_bfloat16_undefines();
  options.insert(options.end(), undefines.begin(), undefines.end());
  // TVM_CUDA_NVRTC_NO_FAST_MATH: IEEE division and square roots (TVM after 0.27 reads it).
  if (!env("TVM_CUDA_NVRTC_NO_FAST_MATH")) options.emplace_back("--use_fast_math");
  for (const std::string& flag : ptxas_flags()) options.push_back("--ptxas-options=" + flag);
  if (auto extra = env("TVM_CUDA_NVRTC_EXTRA_OPTS")) {
    for (std::string& word :
         kiln::internal::split_shell_words(*extra, "TVM_CUDA_NVRTC_EXTRA_OPTS")) {
      options.push_back(std::move(word));
    }
  }
  for (const std::string& option : request.options) {
    if (!nvcc_only(option)) options.push_back(option);
  }
  return options;
}

namespace {

// Owns one NVRTC program.
class Program {
 public:
  Program(const NvrtcLibrary& lib, const std::string& source, const std::string& name) : lib_(lib) {
    result_ = lib_.create_program(&program_, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  }
  ~Program() {
    if (result_ == 0) lib_.destroy_program(&program_);
  }
  int created() const noexcept { return result_; }  // nvrtcCreateProgram's result
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  NvrtcLibrary::Program get() const noexcept { return program_; }
  std::string log() const {
    std::size_t size = 0;
    if (lib_.get_program_log_size(program_, &size) != 0 || size == 0) return {};
    std::string text(size, '\0');
    if (lib_.get_program_log(program_, text.data()) != 0) return {};
    while (!text.empty() && text.back() == '\0') text.pop_back();  // ptxas' output ends in one
    return text;
  }

 private:
  const NvrtcLibrary& lib_;
  NvrtcLibrary::Program program_ = nullptr;
  int result_ = 0;
};

// Links a relocatable cubin against NVSHMEM's device library with nvJitLink: no GPU or driver.
std::string link_nvshmem(const Request& request, const std::string& cubin,
                         const std::string& arch) {
  const NvJitLinkLibrary& lib = nvjitlink();
  fs::path device = find_nvshmem_paths().lib_dir / "libnvshmem_device.a";
  std::error_code ec;
  if (!fs::exists(device, ec)) {
    throw FileNotFound("NVSHMEM device library not found: " + device.string());
  }
  std::string arch_option = "-arch=" + arch;
  const char* options[] = {arch_option.c_str()};
  NvJitLinkLibrary::Handle handle = nullptr;
  if (int r = lib.create(&handle, 1, options); r != 0) {
    throw LibraryCallFailed("nvJitLinkCreate", r,
                            fmt::format("nvJitLinkCreate failed with result {}", r));
  }
  struct Destroy {
    const NvJitLinkLibrary& lib;
    NvJitLinkLibrary::Handle& handle;
    ~Destroy() { lib.destroy(&handle); }
  } destroy{lib, handle};
  auto fail = [&](const char* step, int r) {
    std::size_t size = 0;
    std::string log;
    if (lib.get_error_log_size(handle, &size) == 0 && size > 0) {
      log.assign(size, '\0');
      if (lib.get_error_log(handle, log.data()) != 0) log.clear();
      if (!log.empty() && log.back() == '\0') log.pop_back();
    }
    return ToolFailed({.label = "Compilation error:",
                       .output = fmt::format("nvJitLink {} failed ({}):\n{}", step, r, log),
                       .command_line = format_command_line(
                           {"nvJitLink", arch_option, "tvm_kernels.cubin", device.string()}),
                       .source = request.code});
  };
  if (int r = lib.add_data(handle, NvJitLinkLibrary::kInputCubin, cubin.data(), cubin.size(),
                           "tvm_kernels.cubin");
      r != 0) {
    throw fail("adding the kernel", r);
  }
  if (int r = lib.add_file(handle, NvJitLinkLibrary::kInputLibrary, device.c_str()); r != 0) {
    throw fail("adding libnvshmem_device.a", r);
  }
  if (int r = lib.complete(handle); r != 0) throw fail("linking", r);
  std::size_t size = 0;
  if (int r = lib.get_linked_cubin_size(handle, &size); r != 0) throw fail("sizing the cubin", r);
  std::string linked(size, '\0');
  if (int r = lib.get_linked_cubin(handle, linked.data()); r != 0) {
    throw fail("copying the cubin", r);
  }
  return linked;
}

// TVM_KERNEL_DUMP: kiln's own output for the user to read, so written whole or not at all.
void dump(const fs::path& dir, const std::string& name, const std::string& bytes) {
  fs::create_directories(dir);
  kiln::internal::write_file_atomically(dir / name, bytes);
}

}  // namespace

NvrtcAttempt attempt_nvrtc(const std::string& source, const std::string& name,
                           const std::vector<std::string>& options, bool cubin) {
  const NvrtcLibrary& lib = nvrtc();
  Program program(lib, source, name);
  NvrtcAttempt attempt;
  if (int r = program.created(); r != 0) {
    attempt.result = r;
    attempt.failed_call = "nvrtcCreateProgram";
    return attempt;
  }
  std::vector<const char*> argv;
  argv.reserve(options.size());
  for (const std::string& option : options) argv.push_back(option.c_str());
  attempt.result = lib.compile_program(program.get(), static_cast<int>(argv.size()), argv.data());
  attempt.log = program.log();
  if (attempt.result != 0) return attempt;
  std::size_t size = 0;
  int r = cubin ? lib.get_cubin_size(program.get(), &size) : lib.get_ptx_size(program.get(), &size);
  if (r == 0) {
    attempt.bytes.assign(size, '\0');
    r = cubin ? lib.get_cubin(program.get(), attempt.bytes.data())
              : lib.get_ptx(program.get(), attempt.bytes.data());
    if (r != 0) attempt.failed_call = cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX";
  } else {
    attempt.failed_call = cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize";
  }
  attempt.result = r;
  if (!cubin && !attempt.bytes.empty() && attempt.bytes.back() == '\0') attempt.bytes.pop_back();
  return attempt;
}

// `command_line`: the compile as NVRTC received it (NvrtcPlan::command_line).
NvrtcOutput checked(const std::string& code, std::string command_line, NvrtcAttempt attempt) {
  int r = attempt.result;
  if (r != 0 && attempt.failed_call == "nvrtcCreateProgram") {
    throw LibraryCallFailed("nvrtcCreateProgram", r,
                            "Failed to create NVRTC program: " + nvrtc_error(r));
  }
  if (r != 0 && attempt.failed_call.empty()) {
    throw ToolFailed({.label = std::string(kNvrtcFailed),
                      .output = std::move(attempt.log),
                      .command_line = std::move(command_line),
                      .status = nvrtc_error(r),
                      .source = code});
  }
  if (r != 0) {
    bool size = attempt.failed_call.ends_with("Size");
    std::string what = attempt.failed_call.find("CUBIN") != std::string::npos ? "CUBIN" : "PTX";
    throw LibraryCallFailed(
        attempt.failed_call, r,
        fmt::format("Failed to get {}{}: {}", what, size ? " size" : "", nvrtc_error(r)));
  }
  return {std::move(attempt.bytes), std::move(attempt.log)};
}

NvrtcOutput run_nvrtc(const std::string& code, const std::string& source,
                      const std::vector<std::string>& options, bool cubin,
                      const std::string& name) {
  std::vector<std::string> argv = {"nvrtc"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back(name);
  return checked(code, format_command_line(argv), attempt_nvrtc(source, name, options, cubin));
}

std::string program_name(const Request& request) {
  if (request.source_path.empty()) return "tvm_kernels.cu";
  return fs::absolute(request.source_path).lexically_normal().string();
}

std::vector<fs::path> toolkit_include_dirs() {
  std::vector<fs::path> dirs;
  for (const std::string& option : include_options(find_cuda_path())) {
    dirs.emplace_back(option.substr(2));  // "-I<dir>"
  }
  return dirs;
}

NvrtcSource prepared_source(const Request& request, const std::string& arch,
                            const std::vector<std::string>& options,
                            const std::vector<fs::path>& toolkit_dirs) {
  auto [major, minor] = parse_compute_version(compute_version_of_arch(arch));
  IncludeSearch search(options, toolkit_dirs);
  return nvrtc_source(request.code, request.nvshmem, major * 100 + minor * 10,
                      program_name(request),
                      [&](std::string_view header) { return search.from_toolkit(header); });
}

NvrtcPlan plan_of(const Request& request) {
  NvrtcPlan plan;
  plan.arch = spelled_arch(request);
  plan.name = program_name(request);
  plan.options = nvrtc_options(request, plan.arch);
  plan.toolkit_dirs = toolkit_include_dirs();
  plan.cubin = request.format == Format::cubin;
  plan.dump_dir = env("TVM_KERNEL_DUMP");
  return plan;
}

NvrtcPlan& with_source(NvrtcPlan& plan, const Request& request) {
  plan.prepared = prepared_source(request, plan.arch, plan.options, plan.toolkit_dirs);
  return plan;
}

std::string NvrtcPlan::command_line() const {
  std::vector<std::string> argv = {"nvrtc"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back(name);
  return format_command_line(argv);
}

std::string users_log(const std::string& log) {
  std::vector<std::string> toolkit;
  for (const fs::path& dir : toolkit_include_dirs()) toolkit.push_back(dir.string());
  return without_diagnostics(
      log, [&](std::string_view line) { return is_toolkit_warning(line, toolkit); });
}

namespace {

// Compiles once: in kiln's compile server when there is one (its precompiled headers make the
// toolkit's headers nearly free), else where request.no_server says, else here; then the dump files
// and NVSHMEM's link. A module of many kernels is compiled in parts at once when it can be
// (nvrtc_parallel.h).
CompileResult compile_where_it_can(const Request& request, const NvrtcPlan& plan) {
  if (std::optional<CompileResult> parts = compile_in_parts(request, plan)) return *parts;
  const std::string& source = plan.prepared.text;
  NvrtcJob job{.source = source,
               .header_prefix = plan.prepared.header_prefix,
               .name = plan.name,
               .options = plan.options,
               .cubin = plan.cubin};
  for (const fs::path& dir : plan.toolkit_dirs) job.toolkit_dirs.push_back(dir.string());
  std::optional<NvrtcAttempt> served = compile_in_server(job);
  if (!served && request.no_server) return request.no_server();
  NvrtcOutput output = checked(
      request.code, plan.command_line(),
      served ? std::move(*served) : attempt_nvrtc(source, plan.name, plan.options, plan.cubin));
  if (plan.dump_dir) {
    dump(*plan.dump_dir, plan.cubin ? "tvm_kernels.cubin" : "tvm_kernels.ptx", output.bytes);
    dump(*plan.dump_dir, "tvm_kernels.nvrtc.log", output.log);
  }
  if (request.nvshmem) output.bytes = link_nvshmem(request, output.bytes, plan.arch);
  return CompileResult{.bytes = std::move(output.bytes), .log = users_log(output.log)};
}

// compile_where_it_can, the result saying what NVRTC was given.
CompileResult compile_once(const Request& request, const NvrtcPlan& plan) {
  CompileResult result = compile_where_it_can(request, plan);
  result.command_line = plan.command_line();
  return result;
}

}  // namespace

CompileResult compile_with_nvrtc(const Request& request) {
  if (request.format == Format::fatbin) {
    throw InvalidArgument(
        "NVRTC does not support fatbin generation yet. Use target_format='cubin' or 'ptx' with "
        "NVRTC, or set compiler='nvcc' for fatbin compilation.");
  }
  NvrtcPlan plan = plan_of(request);
  with_source(plan, request);
  if (plan.dump_dir) dump(*plan.dump_dir, "tvm_kernels.cu", plan.prepared.text);
  if (request.cache == nullptr) return compile_once(request, plan);
  DirectCache direct(*request.cache, kernel_key(request, plan),
                     std::vector<fs::path>{});  // headers: below
  if (std::optional<CompileResult> hit = served_from(direct, request)) {
    hit->command_line = plan.command_line();
    return std::move(*hit);
  }
  CompileResult result = compile_once(request, plan);
  TempDirectory scratch;
  if (auto headers = nvrtc_headers(request.code, plan.prepared.text, plan.options, scratch.path(),
                                   fs::path(plan.name).parent_path())) {
    direct.put(*headers, result.bytes, {scratch.path(), find_cuda_path()});  // toolkit keyed
  }
  return result;
}

}  // namespace kiln::cuda::internal
