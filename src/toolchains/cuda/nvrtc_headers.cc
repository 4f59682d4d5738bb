// nvrtc_headers(): the headers an NVRTC compile reads, for the direct-mode cache.
//
// NVRTC (13.0) takes no dependency option: -M, -MM, -MD, -MF, --dependency-output,
// --generate-dependencies, -H and -E are all "unrecognized option" to nvrtcCompileProgram. The
// honest stand-in is the same toolkit's nvcc asked for its dependency output (-M) on the same
// source with the same include and macro options, "..." looked up in the working directory first
// (NVRTC resolves them against the directory of the program's name, which kiln gives none).
#include <algorithm>
#include <array>
#include <regex>

#include "backends.h"
#include "kiln/direct_cache.h"
#include "kiln/error.h"
#include "kiln/process.h"
#include "nvrtc_prefix.h"
#include "nvrtc_source.h"

namespace kiln::cuda::internal {
namespace {

namespace fs = std::filesystem;

// The options among `options` that decide which files the preprocessor opens.
std::vector<std::string> preprocessing_options(const std::vector<std::string>& options) {
  static constexpr std::array<std::string_view, 10> kWithValue = {
      "-I", "-isystem",       "-include", "--include-path",   "--system-include",
      "-D", "--define-macro", "-U",       "--undefine-macro", "--pre-include"};
  std::vector<std::string> kept;
  for (size_t i = 0; i < options.size(); ++i) {
    const std::string& option = options[i];
    bool separate = std::find(kWithValue.begin(), kWithValue.end(), option) != kWithValue.end();
    if (separate && i + 1 < options.size()) {
      kept.push_back(option);
      kept.push_back(options[++i]);
      continue;
    }
    bool joined = std::any_of(kWithValue.begin(), kWithValue.end(), [&](std::string_view flag) {
      return option.size() > flag.size() && option.starts_with(flag) &&
             (flag.size() == 2 || option[flag.size()] == '=');
    });
    if (joined) kept.push_back(option);
  }
  return kept;
}

bool inside(const fs::path& dir, const fs::path& path) {
  fs::path relative = path.lexically_normal().lexically_relative(dir);
  return !relative.empty() && *relative.begin() != "..";
}

// Every #include of `code`, as written after the word (nvrtc_includes without the conditions).
std::vector<std::string> all_includes(std::string_view code) {
  static const std::regex include(R"re(#\s*include\s*(<[^>\n]*>|"[^"\n]*"))re");
  std::vector<std::string> found;
  for (auto it = std::cregex_iterator(code.data(), code.data() + code.size(), include);
       it != std::cregex_iterator(); ++it) {
    found.push_back((*it)[1].str());
  }
  return found;
}

// The directories named by -I, -isystem and their long spellings among `kept`.
std::vector<fs::path> include_dirs(const std::vector<std::string>& kept) {
  std::vector<fs::path> dirs;
  for (size_t i = 0; i < kept.size(); ++i) {
    const std::string& option = kept[i];
    for (std::string_view flag : {"-I", "--include-path", "-isystem", "--system-include"}) {
      if (!option.starts_with(flag)) continue;
      std::string dir = option.size() == flag.size() && i + 1 < kept.size()
                            ? kept[++i]
                            : option.substr(flag.size() + (option[flag.size()] == '=' ? 1 : 0));
      dirs.push_back(fs::absolute(dir));
      break;
    }
  }
  return dirs;
}

}  // namespace

std::optional<std::vector<fs::path>> nvrtc_headers(std::string_view code, const std::string& source,
                                                   const std::vector<std::string>& options,
                                                   const fs::path& scratch,
                                                   const fs::path& source_dir, bool nvrtc) {
  fs::path nvcc = find_cuda_path() / "bin" / "nvcc";
  fs::path toolkit = nvcc.parent_path().parent_path().lexically_normal();
  std::vector<std::string> kept = preprocessing_options(options);
  if (!reads_outside_toolkit(code, options, nvrtc)) return std::vector<fs::path>{};
  fs::path cwd = fs::current_path();
  // nvcc splits -Xcompiler's value on commas and hands it to the host compiler through a shell.
  for (const fs::path& dir : {cwd, source_dir}) {
    if (dir.string().find_first_of(", '\"\\$`") != std::string::npos) return std::nullopt;
  }
  if (!kiln::internal::is_file(nvcc)) return std::nullopt;
  fs::path file = scratch / "tvm_kernels.cu";
  fs::path depfile = scratch / "tvm_kernels.d";
  // Without the #line that names the user's file: nvcc -M would list that name as a dependency.
  std::string scanned = source;
  if (size_t line = scanned.find("\n#line 1 \""); line != std::string::npos) {
    scanned.erase(line + 1, scanned.find('\n', line + 1) - line);
  }
  kiln::internal::write_file(file, scanned);
  std::vector<std::string> argv{nvcc.string(), "-M", "-x", "cu"};
  // NVRTC looks beside the program's name first (the user's file), then in the working directory.
  if (!source_dir.empty()) argv.push_back("-Xcompiler=-iquote" + source_dir.string());
  argv.push_back("-Xcompiler=-iquote" + cwd.string());
  argv.insert(argv.end(), kept.begin(), kept.end());
  argv.insert(argv.end(), {file.string(), "-o", depfile.string()});
  if (!run({.argv = std::move(argv)}).ok() || !kiln::internal::is_file(depfile)) {
    return std::nullopt;
  }
  std::vector<fs::path> headers;
  for (fs::path& header : parse_depfile(kiln::internal::read_file(depfile), cwd)) {
    // The toolkit's own headers are keyed by its identity.
    if (!inside(toolkit, header) && header != file) headers.push_back(std::move(header));
  }
  return headers;
}

bool reads_outside_toolkit(std::string_view code, const std::vector<std::string>& options,
                           bool nvrtc) {
  std::vector<std::string> kept = preprocessing_options(options);
  for (const std::string& option : kept) {
    if (option.starts_with("-include") || option.starts_with("--pre-include")) return true;
  }
  std::vector<std::string> includes = nvrtc ? nvrtc_includes(code, 0) : all_includes(code);
  fs::path cuda = find_cuda_path();
  fs::path toolkit = (cuda / "bin" / "nvcc").parent_path().parent_path().lexically_normal();
  std::vector<fs::path> user_dirs;
  for (fs::path& dir : include_dirs(kept)) {
    if (!inside(toolkit, dir) && !inside(cuda, dir)) user_dirs.push_back(std::move(dir));
  }
  std::vector<fs::path> toolkit_dirs;
  for (const std::string& option : include_options(cuda))
    toolkit_dirs.emplace_back(option.substr(2));
  std::error_code ec;
  for (const std::string& include : includes) {
    if (!include.starts_with("<") || include.find('>') == std::string::npos) return true;
    std::string header = include.substr(1, include.find('>') - 1);
    auto holds = [&](const fs::path& dir) { return fs::exists(dir / header, ec); };
    if (std::any_of(user_dirs.begin(), user_dirs.end(), holds)) return true;  // shadows
    if (std::none_of(toolkit_dirs.begin(), toolkit_dirs.end(), holds)) return true;
  }
  return false;
}

}  // namespace kiln::cuda::internal

namespace kiln::cuda {

std::optional<std::vector<std::filesystem::path>> headers_read(
    std::string_view code, const CompileOptions& options, const std::filesystem::path& scratch) {
  namespace fs = std::filesystem;
  try {
    if (options.backend == Backend::nvcc) {
      // nvcc finds "..." beside the user's file first (it compiles the file, or a copy with
      // -I<its directory>): without that directory a header there is not found, and nothing
      // could be keyed.
      fs::path source_dir;
      if (!options.source_path.empty()) {
        source_dir = fs::absolute(options.source_path).lexically_normal().parent_path();
      }
      return internal::nvrtc_headers(code, std::string(code), options.options, scratch, source_dir,
                                     /*nvrtc=*/false);
    }
    internal::Request request = internal::request_of(code, options);
    internal::NvrtcPlan plan = internal::plan_of(request);
    internal::with_source(plan, request);
    return internal::nvrtc_headers(code, plan.prepared.text, plan.options, scratch,
                                   fs::path(plan.name).parent_path());
  } catch (const Error&) {  // no toolkit, no GPU to name the arch: the compile fails the same way
    return std::nullopt;
  }
}

}  // namespace kiln::cuda
