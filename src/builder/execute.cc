// cache_key() and execute(): a job's key and its making, both read from its Recipe (recipe.h).
#include <fstream>
#include <regex>
#include <set>

#include "internal/files.h"
#include "kiln/cache.h"
#include "kiln/cc.h"
#include "kiln/clang.h"
#include "kiln/cuda.h"
#include "kiln/ndk.h"
#include "kiln/process.h"
#include "kiln/rocm.h"
#include "kiln/tar.h"
#include "recipe.h"

namespace kiln::build::detail {
namespace {

namespace fs = std::filesystem;

// NVRTC runs in the library's own process: a crash or hang there must take down a pool worker,
// never kiln. Arguments: {code, format, arch, options}; result: the compiled bytes.
Value compile_cuda_task(Value args) {
  cuda::CompileOptions options;
  options.format = cuda::format_from_name(args["format"].get<std::string>());
  options.arch = args["arch"].get<std::string>();
  options.options = args["options"].get<std::vector<std::string>>();
  options.backend = cuda::Backend::nvrtc;
  options.use_cache = false;  // kiln build caches the job's output itself
  std::string bytes = cuda::compile_cuda(args["code"].get<std::string>(), options);
  return Value::binary(std::vector<std::uint8_t>(bytes.begin(), bytes.end()));
}
KILN_TASK(kiln_build_cuda, compile_cuda_task);

bool scans_includes(const std::optional<Language>& language) {
  return language && *language != Language::llvm_ir;
}

std::string extension_of(const std::optional<Language>& language) {
  switch (language.value_or(Language::c)) {
    case Language::c:
      return ".c";
    case Language::cxx:
      return ".cc";
    case Language::cuda:
      return ".cu";
    case Language::llvm_ir:
      return ".ll";
    case Language::assembly:
      return ".S";
    case Language::opencl:
      break;
  }
  return ".cl";
}

// The job's sources: its files, or its inline code written to work_dir/<name>.<ext>.
std::vector<fs::path> source_files(const Job& job, const fs::path& work_dir) {
  if (job.code.empty()) return job.sources;
  fs::path file = work_dir / (job.name + extension_of(job.language));
  internal::write_file_atomically(file, job.code);
  return {file};
}

std::vector<std::string> include_dirs(const std::vector<std::string>& options) {
  std::vector<std::string> dirs;
  for (size_t i = 0; i < options.size(); ++i) {
    const std::string& o = options[i];
    if (o == "-I" && i + 1 < options.size()) {
      dirs.push_back(options[++i]);
    } else if (o.starts_with("-I") && o.size() > 2) {
      dirs.push_back(o.substr(2));
    }
  }
  return dirs;
}

// Headers a source includes with "..." that exist beside it or in a -I directory, recursively.
void scan_includes(const fs::path& file, const std::vector<std::string>& dirs,
                   std::set<fs::path>& seen, int depth) {
  static const std::regex include_line(R"re(^\s*#\s*include\s*"([^"]+)")re");
  if (depth > 32) return;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, include_line)) continue;
    std::vector<fs::path> candidates{file.parent_path() / m[1].str()};
    for (const std::string& dir : dirs) candidates.emplace_back(fs::path(dir) / m[1].str());
    for (const fs::path& candidate : candidates) {
      if (!internal::is_file(candidate)) continue;
      fs::path normal = candidate.lexically_normal();
      if (seen.insert(normal).second) scan_includes(normal, dirs, seen, depth + 1);
      break;
    }
  }
}

void add_part(std::string& blob, std::string_view part) {
  blob += std::to_string(part.size());
  blob += ':';
  blob += part;
}

std::optional<std::vector<std::string>> options_if_any(const Job& job) {
  if (job.options.empty()) return std::nullopt;
  return job.options;
}

void make_cuda(const Job& job, const std::vector<fs::path>& sources, const fs::path& output,
               pool::Worker& nvrtc_worker) {
  std::string code = job.code.empty() ? internal::read_file(sources.front()) : job.code;
  std::vector<std::string> options = job.options;
  if (!job.sources.empty()) options.push_back("-I" + sources.front().parent_path().string());
  if (job.backend == cuda::Backend::nvcc) {
    cuda::compile_cuda(code, {.format = job.format,
                              .arch = job.arch,
                              .options = options,
                              .output = output,
                              .backend = cuda::Backend::nvcc,
                              .use_cache = false});
    return;
  }
  Value bytes = nvrtc_worker.call("kiln_build_cuda", {{"code", code},
                                                      {"format", cuda::format_name(job.format)},
                                                      {"arch", job.arch},
                                                      {"options", options}});
  const auto& binary = bytes.get_binary();
  internal::write_file_atomically(
      output, std::string_view(reinterpret_cast<const char*>(binary.data()), binary.size()));
}

void make_rocm(const Job& job, const Recipe& recipe, const fs::path& source,
               const fs::path& work_dir, const fs::path& output) {
  std::string arch = job.arch.empty() ? rocm::get_rocm_arch().arch : job.arch;
  std::vector<std::string> argv{recipe.program("compiler"),
                                "-target",
                                "amdgcn-amd-amdhsa",
                                "-mcpu=" + arch,
                                "-nogpulib",
                                "-O2"};
  if (job.language == Language::opencl) {
    argv.insert(argv.end(), {"-x", "cl", "-cl-std=CL2.0", "-Xclang", "-finclude-default-header"});
  } else if (job.language == Language::assembly) {
    argv.insert(argv.end(), {"-x", "assembler"});
  }
  for (const fs::path& library : recipe.device_libraries) {
    argv.insert(argv.end(), {"-Xclang", "-mlink-builtin-bitcode", "-Xclang", library.string()});
  }
  fs::path object = work_dir / (job.name + ".o");
  argv.insert(argv.end(), {"-c", source.string(), "-o", object.string()});
  argv.insert(argv.end(), job.options.begin(), job.options.end());
  check("Compilation error:", {.argv = argv});
  rocm::rocm_link(object, output, recipe.program("linker"));
}

void make_wasm(const Job& job, const Recipe& recipe, const std::vector<fs::path>& objects,
               const fs::path& work_dir, const fs::path& output) {
  std::vector<std::string> argv{recipe.program("compiler"),
                                "-O3",
                                "--no-entry",
                                "-s",
                                "STANDALONE_WASM=1",
                                "-s",
                                "ERROR_ON_UNDEFINED_SYMBOLS=0",
                                "-s",
                                "ALLOW_MEMORY_GROWTH=1"};
  if (job.language == Language::cxx) argv.emplace_back("-std=c++17");
  for (const fs::path& object : objects) argv.push_back(object.string());
  argv.insert(argv.end(), job.options.begin(), job.options.end());
  argv.insert(argv.end(), {"-o", output.string()});
  // emcc writes its own temporaries beside the output and into its cache: run it in the job's
  // directory so nothing lands elsewhere.
  check("Compilation error:", {.argv = argv, .cwd = work_dir});
}

void make_library(const Job& job, const Recipe& recipe, const std::vector<fs::path>& objects,
                  const fs::path& output) {
  if (job.toolchain == Toolchain::ndk) {
    ndk::create_shared(output, objects, options_if_any(job));
    return;
  }
  cc::create_shared(
      output, objects,
      {.options = job.options, .cc = recipe.program("compiler"), .launcher = recipe.launcher});
}

void make_static(const Job& job, const Recipe& recipe, const std::vector<fs::path>& inputs,
                 const fs::path& output) {
  if (job.toolchain == Toolchain::ndk) {
    ndk::create_staticlib(output, inputs);
    return;
  }
  cc::create_staticlib(output, inputs, {.ar = recipe.program("compiler")});
}

}  // namespace

std::string cache_key(const Job& job, const Recipe& recipe, const std::vector<fs::path>& inputs) {
  std::string blob;
  add_part(blob, recipe.key_material);
  add_part(blob, job.code);
  std::set<fs::path> headers;
  std::vector<std::string> dirs = include_dirs(job.options);
  for (const fs::path& source : job.sources) {
    add_part(blob, source.string());
    add_part(blob, internal::read_file(source));
    if (scans_includes(job.language)) scan_includes(source, dirs, headers, 0);
  }
  for (const fs::path& header : headers) {
    add_part(blob, header.string());
    add_part(blob, internal::read_file(header));
  }
  for (const fs::path& input : inputs) {
    add_part(blob, input.filename().string());
    add_part(blob, internal::read_file(input));
  }
  return kiln::cache_key({"kiln-build-1", blob});
}

void execute(const Job& job, const Recipe& recipe, const std::vector<fs::path>& inputs,
             const fs::path& work_dir, const fs::path& output, pool::Worker& nvrtc_worker) {
  bool compiles = job.kind != JobKind::static_library && job.kind != JobKind::tar;
  std::vector<fs::path> sources = compiles ? source_files(job, work_dir) : std::vector<fs::path>{};
  std::vector<fs::path> objects = sources;
  objects.insert(objects.end(), inputs.begin(), inputs.end());
  cc::Options cc_options{
      .options = job.options, .cc = recipe.program("compiler"), .launcher = recipe.launcher};
  switch (job.kind) {
    case JobKind::object:
      cc::create_object(output, sources, cc_options);
      return;
    case JobKind::shared:
      return make_library(job, recipe, objects, output);
    case JobKind::executable:
      cc::create_executable(output, objects, cc_options);
      return;
    case JobKind::static_library:
      return make_static(job, recipe, inputs, output);
    case JobKind::llvm_ir:
      clang::create_llvm({sources.front().string()},
                         {.output = output, .options = job.options, .cc = cc_options.cc});
      return;
    case JobKind::cuda:
      return make_cuda(job, sources, output, nvrtc_worker);
    case JobKind::rocm_code_object:
      return make_rocm(job, recipe, sources.front(), work_dir, output);
    case JobKind::wasm:
      return make_wasm(job, recipe, objects, work_dir, output);
    case JobKind::tar:
      tar(output, inputs);
      return;
  }
}

}  // namespace kiln::build::detail
