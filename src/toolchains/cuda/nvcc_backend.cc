// The nvcc backend: the seed's flags, in the seed's order, through the process runner.
#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "backends.h"
#include "internal/files.h"
#include "kiln/cuda.h"
#include "kiln/direct_cache.h"
#include "kiln/error.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"

namespace kiln::cuda::internal {
namespace {

namespace fs = std::filesystem;

// Runs one stage; a failure carries the source and the tool's output, as the seed's does. nvcc
// keeps its intermediate files in TMPDIR and removes them only when it ends normally: they go to
// `temp`, which goes away with the compile whatever happens to nvcc.
// Returns what the stage printed (warnings, ptxas -v's lines).
std::string run_stage(const std::string& code, std::vector<std::string> argv, const fs::path& temp,
                      const std::optional<Launcher>& launcher = {}) {
  RunOptions options{.argv = std::move(argv), .env = {{"TMPDIR", temp.string()}}};
  if (launcher) {
    options.argv = launcher->wrap(options.argv);
    options.env.insert(launcher->env.begin(), launcher->env.end());
  }
  RunResult result = run(options);
  if (!result.ok()) {
    ToolFailure failure = tool_failed("Compilation error:", result.output, result).failure();
    failure.source = code;
    throw ToolFailed(std::move(failure));
  }
  return std::move(result.output);
}

// <cuda>/bin/nvcc, else the nvcc run() finds on PATH, as an absolute path: the file the key
// identifies (kernel_key) is the one that runs. "nvcc" (to fail as not found) when none is.
std::string nvcc_program() {
  fs::path nvcc = find_cuda_path() / "bin" / "nvcc";
  std::error_code ec;
  if (fs::exists(nvcc, ec)) return nvcc.string();
  try {
    return program_path({.argv = {"nvcc"}}).string();
  } catch (const Error&) {
    return "nvcc";
  }
}

// The nvcc command before its output and inputs, in the seed's order: the format, -O3, the dump
// and debug flags, the arch, the half/bfloat16 undefines, the fixed language flags, fast math,
// ptxas' options, then the request's own options.
std::vector<std::string> nvcc_command(const Request& request, Format format,
                                      const std::optional<std::string>& dump,
                                      const std::string& digits,
                                      const std::vector<std::string>& source_options) {
  std::vector<std::string> cmd = {nvcc_program(), fmt::format("--{}", format_name(format)), "-O3"};
  if (dump) {
    cmd.insert(cmd.end(), {"-lineinfo", "--keep", "--keep-dir=" + *dump});
  }
  if (env("TVM_KERNEL_DEBUG") == "1") cmd.insert(cmd.end(), {"-g", "-G"});
  if (!request.archs.empty()) {
    std::vector<std::string> gencode = gencode_options(request.archs);
    cmd.insert(cmd.end(), gencode.begin(), gencode.end());
  } else if (request.arch.empty()) {
    cmd.insert(cmd.end(), {"-gencode", fmt::format("arch=compute_{0},code=sm_{0}", digits)});
  } else {
    cmd.insert(cmd.end(), {"-arch", request.arch});
  }
  const auto& undefines = half_and_bfloat16_undefines();
  cmd.insert(cmd.end(), undefines.begin(), undefines.end());
  cmd.insert(cmd.end(), {"--expt-relaxed-constexpr", "--expt-extended-lambda"});
  if (!env("TVM_CUDA_NVCC_NO_FAST_MATH")) cmd.emplace_back("--use_fast_math");
  std::string ptxas = "--ptxas-options=";
  for (const std::string& flag : ptxas_flags()) {
    ptxas += (ptxas.back() == '=' ? "" : ",") + flag;
  }
  cmd.push_back(ptxas);
  cmd.insert(cmd.end(), source_options.begin(), source_options.end());
  cmd.insert(cmd.end(), request.options.begin(), request.options.end());
  return cmd;
}

// The user's file itself when `code` is exactly its content, it is a .cu file (nvcc picks the
// language by the extension) and no dump is asked for: nvcc then finds its "..." includes beside
// it and names it and its lines in messages, exactly as when it is given the file. Otherwise a
// copy, tvm_kernels.cu in `dir` (as the seed writes it), which starts with a #line naming the
// user's file when there is one (NvccSource::copy, which the compile writes).
NvccSource nvcc_source(const Request& request, const fs::path& dir, bool dump) {
  const fs::path& file = request.source_path;
  NvccSource source{.path = dir / "tvm_kernels.cu", .key = file.string()};
  if (file.empty()) {
    source.copy = request.code;
    return source;
  }
  if (!dump && file.extension() == ".cu" && kiln::internal::is_file(file)) {
    std::string content;
    try {
      content = kiln::internal::read_file(file);
    } catch (const Error&) {  // NOLINT(bugprone-empty-catch): unreadable, so compiled as a copy
    }
    if (content == request.code) {
      // A relative name that starts with '-' would be read as an option.
      fs::path path = file.string().starts_with('-') ? fs::path(".") / file : file;
      return {.path = path, .key = "in place:" + file.string()};
    }
  }
  std::string quoted;
  for (char c : file.string()) {
    if (c == '"' || c == '\\') quoted.push_back('\\');
    quoted.push_back(c);
  }
  source.copy = fmt::format("#line 1 \"{}\"\n{}", quoted, request.code);
  fs::path parent = file.parent_path();
  source.options.push_back("-I" + (parent.empty() ? std::string(".") : parent.string()));
  return source;
}

// Links `object` (a relocatable NVSHMEM build) with NVSHMEM's device library and cudadevrt into
// `dir`/tvm_kernels.cubin with nvlink (its temporaries in `temp`); returns that path. A failure
// is ToolFailed.
fs::path link_with_nvlink(const std::string& code, const fs::path& object,
                          const NvshmemPaths& nvshmem, const std::string& digits,
                          const fs::path& dir, const fs::path& temp, std::string& log) {
  fs::path cubin = dir / "tvm_kernels.cubin";
  fs::path nvlink = fs::path(nvcc_program()).parent_path() / "nvlink";
  log +=
      run_stage(code,
                {nvlink.has_parent_path() ? nvlink.string() : "nvlink", "-arch=sm_" + digits, "-L",
                 nvshmem.lib_dir.string(), "-L", (find_cuda_path() / "lib64").string(), "-l",
                 "nvshmem_device", "-l", "cudadevrt", "-o", cubin.string(), object.string()},
                temp);
  return cubin;
}

// The digits of the one arch a compile is for (the -gencode of a default arch, nvlink's -arch):
// `arch`'s, else the first arch name of `archs`, else the device's. "" when several targets are
// given and no NVSHMEM link needs one.
std::string digits_of(const Request& request) {
  if (request.archs.empty()) return arch_digits(request.arch);
  if (!request.nvshmem) return {};
  auto named = std::find_if(request.archs.begin(), request.archs.end(),
                            [](const std::string& a) { return is_arch_name(a); });
  return arch_digits(named == request.archs.end() ? std::string() : *named);
}

// Stores the result: with the headers nvcc's dependency output names when `cmd` asked for one
// (-MD), else with none (only the toolkit's, keyed by its identity), the user's file compiled in
// place still holding the code the key has.
void store(const DirectCache& direct, const NvccSource& source, const std::vector<std::string>& cmd,
           const fs::path& depfile, const fs::path& temp, const std::string& code,
           const std::string& bytes) {
  if (std::find(cmd.begin(), cmd.end(), "-MD") == cmd.end()) {
    bool unchanged =
        !source.key.starts_with("in place:") || kiln::internal::read_file(source.path) == code;
    if (unchanged) direct.put({}, bytes, {});
  } else if (kiln::internal::is_file(depfile)) {
    fs::path toolkit = fs::path(cmd[0]).parent_path().parent_path();
    direct.put(parse_depfile(kiln::internal::read_file(depfile), fs::current_path()), bytes,
               {temp, toolkit.lexically_normal(), find_cuda_path()});
  }
}

}  // namespace

NvccPlan nvcc_plan(const Request& request, const fs::path& dir) {
  NvccPlan plan{.format = request.format, .dump = env("TVM_KERNEL_DUMP")};
  // The seed dumps SASS from a fatbin.
  if (plan.dump && !request.nvshmem) plan.format = Format::fatbin;
  if (request.nvshmem) plan.nvshmem = find_nvshmem_paths();
  plan.digits = digits_of(request);
  plan.source = nvcc_source(request, plan.dump ? fs::path(*plan.dump) : dir, plan.dump.has_value());
  plan.command = nvcc_command(request, plan.format, plan.dump, plan.digits, plan.source.options);
  return plan;
}

CompileResult compile_with_nvcc(const Request& request) {
  TempDirectory temp;
  NvccPlan plan = nvcc_plan(request, temp.path());
  const std::optional<std::string>& dump = plan.dump;
  const NvccSource& source = plan.source;
  if (dump) fs::create_directories(*dump);
  if (source.copy) kiln::internal::write_file(source.path, *source.copy);
  // A dump keeps nvcc's result beside the source, as the seed's does, unless the caller names
  // the output (the seed's path_target, which the seed writes instead).
  fs::path target_dir = dump && request.output.empty() ? fs::path(*dump) : temp.path();
  fs::path target = target_dir / fmt::format("tvm_kernels.{}", format_name(plan.format));
  if (request.nvshmem) target = target_dir / "tvm_kernels.o";  // first: a relocatable object

  std::vector<std::string> cmd = plan.command;
  // Headers keyed from nvcc's own dependency output; the user's file compiled in place is among
  // them, so a change to it during the compile stores nothing.
  std::optional<DirectCache> direct;
  fs::path depfile = temp / "tvm_kernels.d";
  if (request.cache != nullptr) {
    direct.emplace(*request.cache, kernel_key(request, plan), std::vector<fs::path>{});
    if (std::optional<CompileResult> hit = served_from(*direct, request)) return std::move(*hit);
    // -MD costs nvcc a whole host-side preprocessing pass (+0.1-0.3 s): only when the compile
    // may read a header the toolkit's identity does not cover.
    std::vector<std::string> options = request.options;
    options.insert(options.end(), source.options.begin(), source.options.end());
    if (reads_outside_toolkit(request.code, options)) {
      cmd.insert(cmd.end(), {"-MD", "-MF", depfile.string()});
    }
  }
  cmd.insert(cmd.end(), {"-o", target.string()});
  if (request.nvshmem) {
    cmd.insert(cmd.end(),
               {"-c", source.path.string(), "-rdc=true", "-I", plan.nvshmem->include_dir.string()});
  } else {
    cmd.push_back(source.path.string());
  }
  std::string log = run_stage(request.code, cmd, temp.path(), request.launcher);
  if (request.nvshmem) {
    target = link_with_nvlink(request.code, target, *plan.nvshmem, plan.digits, target_dir,
                              temp.path(), log);
  }
  std::string bytes = kiln::internal::read_file(target, "the compiler wrote no");
  if (direct) store(*direct, source, cmd, depfile, temp.path(), request.code, bytes);
  return {.bytes = std::move(bytes), .log = std::move(log)};
}

}  // namespace kiln::cuda::internal
