#include "job.h"

#include <sys/stat.h>

#include <fstream>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/files.h"
#include "kiln/cache.h"
#include "kiln/cc.h"
#include "kiln/clang.h"
#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/launcher.h"
#include "kiln/ndk.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "kiln/rocm.h"
#include "kiln/tar.h"
#include "kiln_build_info.h"

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

// Environment variables that change what a tool makes.
constexpr const char* kRelevantEnvironment[] = {"CC",
                                                "CXX",
                                                "CPATH",
                                                "C_INCLUDE_PATH",
                                                "CPLUS_INCLUDE_PATH",
                                                "LIBRARY_PATH",
                                                "CUDA_PATH",
                                                "TVM_CUDA_PTXAS_REG_LEVEL",
                                                "TVM_CUDA_PTXAS_EXTRA_OPTS",
                                                "TVM_NDK_CC",
                                                "ROCM_PATH",
                                                "EMCC_CFLAGS",
                                                "SDKROOT"};

bool is_c_family(const Job& job) {
  return job.language == "c" || job.language == "c++" || job.language == "asm";
}

// The C/C++ compiler of an object, shared or executable job: its "cc"; TVM_NDK_CC for the ndk
// toolchain; for C, $CC or the first of gcc, cc, clang; otherwise cc::get_cc() (C++ first).
std::optional<std::string> c_compiler(const Job& job) {
  if (!job.cc.empty()) return job.cc;
  if (job.toolchain == "ndk") return internal::env("TVM_NDK_CC");
  if (job.toolchain == "xcode") return std::string("clang");  // Xcode's, on a Mac
  if (job.language == "c") {
    if (auto cc = internal::env("CC")) return cc;
    for (const char* name : {"gcc", "cc", "clang"}) {
      if (which(name)) return std::string(name);
    }
    return std::nullopt;
  }
  return cc::get_cc();
}

std::string first_clang(const Job& job) {
  if (!job.cc.empty()) return job.cc;
  std::vector<std::string> found = clang::find_clang({.required = false});
  return found.empty() ? "" : found.front();
}

std::string first_lld() {
  std::vector<std::string> found = rocm::find_lld({.required = false});
  return found.empty() ? "" : found.front();
}

// clang and ld.lld for amdgcn: of the newest LLVM that has both (the device libraries are
// bitcode of one LLVM, and an older clang cannot read them), else the job's cc and any ld.lld.
struct RocmTools {
  std::string clang;
  std::string lld;
};
RocmTools rocm_tools(const Job& job) {
  if (!job.cc.empty()) return {job.cc, first_lld()};
  for (int major : {19, 18, 17, 16, 15}) {
    auto clang = which(fmt::format("clang-{}", major));
    auto lld = rocm::find_lld({.required = false, .llvm_major = major});
    if (clang && !lld.empty() && lld.front().find(std::to_string(major)) != std::string::npos) {
      return {clang->string(), lld.front()};
    }
  }
  return {first_clang(job), first_lld()};
}

std::string launcher_of(const Job& job, const Options& options) {
  bool compiles_c =
      job.kind == JobKind::object || job.kind == JobKind::shared || job.kind == JobKind::executable;
  if (!compiles_c) return "";
  return job.launcher.empty() ? options.launcher : job.launcher;
}

std::string extension_of_language(const std::string& language) {
  if (language == "c") return ".c";
  if (language == "c++") return ".cc";
  if (language == "cuda") return ".cu";
  if (language == "llvm-ir") return ".ll";
  if (language == "asm") return ".S";
  if (language == "opencl") return ".cl";
  return ".txt";
}

// The job's sources: its files, or its inline code written to work_dir/<name>.<ext>.
std::vector<fs::path> source_files(const Job& job, const fs::path& work_dir) {
  if (job.code.empty()) return job.sources;
  fs::path file = work_dir / (job.name + extension_of_language(job.language));
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

std::string missing_tool(std::string_view what, std::string_view name) {
  return fmt::format("toolchain absent: {} ({}) is not installed or not on PATH", what, name);
}

}  // namespace

std::string ToolIdentities::of_file(const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return file.string();
  return fmt::format("{} {} {}.{}", file.string(), st.st_size, st.st_mtim.tv_sec,
                     st.st_mtim.tv_nsec);
}

std::string ToolIdentities::of(const std::string& program) {
  std::promise<std::string> promise;
  std::shared_future<std::string> answer;
  {
    std::lock_guard lock(mutex_);
    if (auto it = known_.find(program); it != known_.end()) {
      answer = it->second;
    } else {
      known_.emplace(program, promise.get_future().share());
    }
  }
  if (answer.valid()) return answer.get();
  try {
    std::string identity = find_out(program);
    promise.set_value(identity);
    return identity;
  } catch (...) {
    promise.set_exception(std::current_exception());
    throw;
  }
}

std::string ToolIdentities::find_out(const std::string& program) {
  std::string identity = program;
  std::optional<fs::path> path =
      program.find('/') != std::string::npos ? std::optional<fs::path>(program) : which(program);
  if (path) {
    std::error_code ec;
    fs::path real = fs::canonical(*path, ec);
    if (!ec) identity = of_file(real);
    std::string key = kiln::cache_key({"kiln-tool-version-1", identity});
    std::optional<std::string> version = ec ? std::nullopt : cache_.get(key);
    if (!version) {
      try {
        RunResult r =
            run({.argv = {path->string(), "--version"}, .timeout = std::chrono::seconds(10)});
        if (r.ok()) {
          version = r.output.substr(0, r.output.find('\n'));
          if (!ec) cache_.put(key, *version);
        }
      } catch (const Error&) {  // NOLINT(bugprone-empty-catch): the file identity is enough
      }
    }
    if (version) identity += " " + *version;
  }
  return identity;
}

Prepared prepare(const Job& job, const Options& options, ToolIdentities& tools) {
  Prepared prepared;
  nlohmann::json recipe = {
      {"kind", kind_name(job.kind)}, {"language", job.language}, {"options", job.options},
      {"toolchain", job.toolchain},  {"arch", job.arch},         {"format", job.format},
      {"backend", job.backend}};
  std::vector<std::string> identities;
  auto need = [&](std::string_view what, const std::string& program) {
    if (program.empty() ||
        (program.find('/') == std::string::npos ? !which(program) : !internal::is_file(program))) {
      if (prepared.skip_reason.empty()) {
        prepared.skip_reason = missing_tool(what, program.empty() ? std::string(what) : program);
      }
      return;
    }
    identities.push_back(tools.of(program));
  };
  switch (job.kind) {
    case JobKind::object:
    case JobKind::shared:
    case JobKind::executable: {
      std::optional<std::string> cc = c_compiler(job);
      if (job.toolchain == "xcode") need("Xcode (xcrun)", "xcrun");
      if (!cc && job.toolchain == "ndk") {
        prepared.skip_reason = "toolchain absent: the ndk toolchain needs TVM_NDK_CC";
      } else {
        need(job.toolchain == "ndk" ? "the NDK compiler" : "the C/C++ compiler", cc.value_or("cc"));
      }
      break;
    }
    case JobKind::static_library:
      if (job.toolchain == "ndk") {
        if (!internal::env("TVM_NDK_CC")) {
          prepared.skip_reason = "toolchain absent: the ndk toolchain needs TVM_NDK_CC";
        } else {
          identities.push_back(tools.of(*internal::env("TVM_NDK_CC")));
        }
      } else {
        if (job.toolchain == "xcode") need("Xcode (xcrun)", "xcrun");
        need("the archiver", "ar");
      }
      break;
    case JobKind::llvm_ir:
      need("clang", first_clang(job));
      break;
    case JobKind::cuda:
      if (job.backend == "nvcc") {
        try {
          need("nvcc", (cuda::find_cuda_path() / "bin" / "nvcc").string());
        } catch (const Error& e) {
          prepared.skip_reason = fmt::format("toolchain absent: {}", e.what());
        }
      } else {
        try {
          auto [major, minor] = cuda::nvrtc_version();
          identities.push_back(fmt::format("nvrtc {}.{}", major, minor));
        } catch (const Error& e) {
          prepared.skip_reason = fmt::format("toolchain absent: NVRTC: {}", e.what());
        }
      }
      break;
    case JobKind::rocm_code_object: {
      RocmTools rocm_tools_found = rocm_tools(job);
      need("clang (for the amdgcn target)", rocm_tools_found.clang);
      need("ld.lld", rocm_tools_found.lld);
      try {
        for (const fs::path& library : rocm::callback_rocm_bitcode_path()) {
          identities.push_back(tools.of_file(library));
        }
      } catch (const Error& e) {
        if (prepared.skip_reason.empty()) {
          prepared.skip_reason =
              fmt::format("toolchain absent: ROCm device libraries: {}", e.what());
        }
      }
      break;
    }
    case JobKind::wasm:
      need("Emscripten", job.cc.empty() ? "emcc" : job.cc);
      break;
    case JobKind::tar:
      identities.emplace_back(std::string("kiln tar ") + KILN_VERSION_STRING);
      break;
  }
  if (std::string launcher = launcher_of(job, options); !launcher.empty()) {
    recipe["launcher"] = launcher;
    need(launcher.c_str(), launcher);
  }
  recipe["tools"] = identities;
  nlohmann::json environment = nlohmann::json::object();
  for (const char* name : kRelevantEnvironment) {
    if (auto value = internal::env(name)) environment[name] = *value;
  }
  recipe["environment"] = environment;
  prepared.recipe = recipe.dump();
  return prepared;
}

std::string cache_key(const Job& job, const Prepared& prepared,
                      const std::vector<fs::path>& input_paths) {
  std::string blob;
  add_part(blob, prepared.recipe);
  add_part(blob, job.code);
  std::set<fs::path> headers;
  std::vector<std::string> dirs = include_dirs(job.options);
  for (const fs::path& source : job.sources) {
    add_part(blob, source.string());
    add_part(blob, internal::read_file(source));
    if (is_c_family(job) || job.language == "cuda" || job.language == "opencl") {
      scan_includes(source, dirs, headers, 0);
    }
  }
  for (const fs::path& header : headers) {
    add_part(blob, header.string());
    add_part(blob, internal::read_file(header));
  }
  for (const fs::path& input : input_paths) {
    add_part(blob, input.filename().string());
    add_part(blob, internal::read_file(input));
  }
  return kiln::cache_key({"kiln-build-1", blob});
}

void execute(const Job& job, const Options& options, const std::vector<fs::path>& input_paths,
             const fs::path& work_dir, const fs::path& output, pool::Worker& nvrtc_worker) {
  std::vector<fs::path> sources = job.kind == JobKind::static_library || job.kind == JobKind::tar
                                      ? std::vector<fs::path>{}
                                      : source_files(job, work_dir);
  std::vector<fs::path> objects = sources;
  objects.insert(objects.end(), input_paths.begin(), input_paths.end());
  std::optional<Launcher> launcher;
  if (std::string name = launcher_of(job, options); !name.empty()) {
    launcher = Launcher::named(name);
  }
  cc::Options cc_options{
      .options = job.options, .cc = c_compiler(job).value_or(""), .launcher = launcher};
  switch (job.kind) {
    case JobKind::object:
      cc::create_object(output, sources, cc_options);
      return;
    case JobKind::shared:
      if (job.toolchain == "ndk") {
        ndk::create_shared(output, objects,
                           job.options.empty()
                               ? std::nullopt
                               : std::optional<std::vector<std::string>>(job.options));
      } else {
        cc::create_shared(output, objects, cc_options);
      }
      return;
    case JobKind::executable:
      cc::create_executable(output, objects, cc_options);
      return;
    case JobKind::static_library:
      if (job.toolchain == "ndk") {
        ndk::create_staticlib(output, input_paths);
      } else {
        cc::create_staticlib(output, input_paths);
      }
      return;
    case JobKind::llvm_ir:
      clang::create_llvm({sources.front().string()},
                         {.output = output, .options = job.options, .cc = first_clang(job)});
      return;
    case JobKind::cuda: {
      std::string code = job.code.empty() ? internal::read_file(sources.front()) : job.code;
      std::vector<std::string> cuda_options = job.options;
      if (!job.sources.empty())
        cuda_options.push_back("-I" + sources.front().parent_path().string());
      if (job.backend == "nvcc") {
        cuda::compile_cuda(code, {.format = cuda::format_from_name(job.format),
                                  .arch = job.arch,
                                  .options = cuda_options,
                                  .output = output,
                                  .backend = cuda::Backend::nvcc,
                                  .use_cache = false});
        return;
      }
      Value bytes = nvrtc_worker.call(
          "kiln_build_cuda",
          {{"code", code}, {"format", job.format}, {"arch", job.arch}, {"options", cuda_options}});
      const auto& binary = bytes.get_binary();
      internal::write_file_atomically(
          output, std::string_view(reinterpret_cast<const char*>(binary.data()), binary.size()));
      return;
    }
    case JobKind::rocm_code_object: {
      std::string arch = job.arch.empty() ? rocm::get_rocm_arch().arch : job.arch;
      RocmTools rocm = rocm_tools(job);
      std::vector<std::string> argv{rocm.clang,      "-target",   "amdgcn-amd-amdhsa",
                                    "-mcpu=" + arch, "-nogpulib", "-O2"};
      if (job.language == "opencl") {
        argv.insert(argv.end(),
                    {"-x", "cl", "-cl-std=CL2.0", "-Xclang", "-finclude-default-header"});
      } else if (job.language == "asm") {
        argv.insert(argv.end(), {"-x", "assembler"});
      }
      if (job.language != "asm") {
        for (const fs::path& library : rocm::callback_rocm_bitcode_path()) {
          argv.insert(argv.end(),
                      {"-Xclang", "-mlink-builtin-bitcode", "-Xclang", library.string()});
        }
      }
      fs::path object = work_dir / (job.name + ".o");
      argv.insert(argv.end(), {"-c", sources.front().string(), "-o", object.string()});
      argv.insert(argv.end(), job.options.begin(), job.options.end());
      check("Compilation error:", {.argv = argv});
      rocm::rocm_link(object, output, rocm.lld);
      return;
    }
    case JobKind::wasm: {
      std::vector<std::string> argv{job.cc.empty() ? "emcc" : job.cc,
                                    "-O3",
                                    "--no-entry",
                                    "-s",
                                    "STANDALONE_WASM=1",
                                    "-s",
                                    "ERROR_ON_UNDEFINED_SYMBOLS=0",
                                    "-s",
                                    "ALLOW_MEMORY_GROWTH=1"};
      if (job.language == "c++") argv.emplace_back("-std=c++17");
      for (const fs::path& object : objects) argv.push_back(object.string());
      argv.insert(argv.end(), job.options.begin(), job.options.end());
      argv.insert(argv.end(), {"-o", output.string()});
      // emcc writes its own temporaries beside the output and into its cache: run it in the
      // job's directory so nothing lands elsewhere.
      check("Compilation error:", {.argv = argv, .cwd = work_dir});
      return;
    }
    case JobKind::tar:
      tar(output, input_paths);
      return;
  }
}

}  // namespace kiln::build::detail
