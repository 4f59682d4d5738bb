// nvrtc_headers(): the headers an NVRTC compile reads, for the direct-mode cache.
//
// NVRTC (13.0) takes no dependency option: -M, -MM, -MD, -MF, --dependency-output,
// --generate-dependencies, -H and -E are all "unrecognized option" to nvrtcCompileProgram. The
// honest stand-in is the same toolkit's nvcc asked for its dependency output (-M) on the same
// source with the same include and macro options, "..." looked up in the working directory first
// (NVRTC resolves them against the directory of the program's name, which kiln gives none).
#include <algorithm>
#include <array>

#include "backends.h"
#include "kiln/direct_cache.h"
#include "kiln/error.h"
#include "kiln/process.h"
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

}  // namespace

std::optional<std::vector<fs::path>> nvrtc_headers(std::string_view code, const std::string& source,
                                                   const std::vector<std::string>& options,
                                                   const fs::path& scratch) {
  bool forced = std::any_of(options.begin(), options.end(), [](const std::string& option) {
    return option.starts_with("-include") || option.starts_with("--pre-include");
  });
  if (code.find("include") == std::string_view::npos && !forced) return std::vector<fs::path>{};
  fs::path nvcc = find_cuda_path() / "bin" / "nvcc";
  fs::path cwd = fs::current_path();
  // nvcc splits -Xcompiler's value on commas and hands it to the host compiler through a shell.
  if (!kiln::internal::is_file(nvcc) ||
      cwd.string().find_first_of(", '\"\\$`") != std::string::npos) {
    return std::nullopt;
  }
  fs::path file = scratch / "tvm_kernels.cu";
  fs::path depfile = scratch / "tvm_kernels.d";
  kiln::internal::write_file(file, source);
  std::vector<std::string> argv{nvcc.string(), "-M", "-x", "cu",
                                "-Xcompiler=-iquote" + cwd.string()};
  std::vector<std::string> kept = preprocessing_options(options);
  argv.insert(argv.end(), kept.begin(), kept.end());
  argv.insert(argv.end(), {file.string(), "-o", depfile.string()});
  if (!run({.argv = std::move(argv)}).ok() || !kiln::internal::is_file(depfile)) {
    return std::nullopt;
  }
  std::vector<fs::path> headers;
  fs::path toolkit = nvcc.parent_path().parent_path().lexically_normal();
  for (fs::path& header : parse_depfile(kiln::internal::read_file(depfile), cwd)) {
    fs::path inside = header.lexically_relative(toolkit);  // keyed by the toolkit's identity
    bool in_toolkit = !inside.empty() && *inside.begin() != "..";
    if (!in_toolkit && header != file) headers.push_back(std::move(header));
  }
  return headers;
}

}  // namespace kiln::cuda::internal

namespace kiln::cuda {

std::optional<std::vector<std::filesystem::path>> headers_read(
    std::string_view code, const CompileOptions& options, const std::filesystem::path& scratch) {
  try {
    if (options.backend == Backend::nvcc) {
      return internal::nvrtc_headers(code, std::string(code), options.options, scratch);
    }
    internal::Request request{.code = std::string(code),
                              .format = options.format.value_or(Format::cubin),
                              .arch = options.arch,
                              .options = options.options,
                              .nvshmem = uses_nvshmem(code)};
    std::string arch = internal::spelled_arch(request);
    return internal::nvrtc_headers(code, internal::nvrtc_source(code, request.nvshmem),
                                   internal::nvrtc_options(request, arch), scratch);
  } catch (const Error&) {  // no toolkit, no GPU to name the arch: the compile fails the same way
    return std::nullopt;
  }
}

}  // namespace kiln::cuda
