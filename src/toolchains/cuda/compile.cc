// compile_cuda: picks the backend and format, and what both backends share.
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends.h"
#include "internal/files.h"
#include "internal/shell_words.h"
#include "kiln/cache.h"
#include "kiln/cuda.h"
#include "kiln/direct_cache.h"
#include "kiln/error.h"

namespace kiln::cuda {
namespace internal {

std::vector<std::string> ptxas_flags() {
  std::vector<std::string> flags = {
      "-v", "--register-usage-level=" + env("TVM_CUDA_PTXAS_REG_LEVEL").value_or("10"),
      "--warn-on-local-memory-usage"};
  if (auto extra = env("TVM_CUDA_PTXAS_EXTRA_OPTS")) {
    for (std::string& word :
         kiln::internal::split_shell_words(*extra, "TVM_CUDA_PTXAS_EXTRA_OPTS")) {
      flags.push_back(std::move(word));
    }
  }
  return flags;
}

std::string arch_digits(const std::string& arch) {
  std::string version = get_target_compute_version(arch);  // "9.0.a"
  std::string digits;
  std::copy_if(version.begin(), version.end(), std::back_inserter(digits),
               [](char c) { return c != '.'; });
  return digits;
}

bool is_arch_name(std::string_view word) {
  if (!word.starts_with("sm_") && !word.starts_with("compute_")) return false;
  try {
    (void)compute_version_of_arch(word);
    return true;
  } catch (const InvalidArgument&) {
    return false;
  }
}

std::vector<std::string> gencode_options(const std::vector<std::string>& archs) {
  std::vector<std::string> options;
  for (const std::string& arch : archs) {
    if (!is_arch_name(arch)) {
      options.push_back(arch);  // an nvcc argument of the seed's list, as it is
      continue;
    }
    std::string digits = arch.substr(arch.find('_') + 1);
    std::string code = arch.starts_with("compute_") ? arch : "sm_" + digits;
    options.insert(options.end(),
                   {"-gencode", fmt::format("arch=compute_{},code={}", digits, code)});
  }
  return options;
}

const std::vector<std::string>& half_and_bfloat16_undefines() {
  static const std::vector<std::string> undefines = {
      "-U__CUDA_NO_HALF_OPERATORS__",      "-U__CUDA_NO_HALF_CONVERSIONS__",
      "-U__CUDA_NO_BFLOAT16_OPERATORS__",  "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
      "-U__CUDA_NO_BFLOAT162_OPERATORS__", "-U__CUDA_NO_BFLOAT162_CONVERSIONS__"};
  return undefines;
}

std::string machine() {
  utsname names{};
  return ::uname(&names) == 0 ? names.machine : "x86_64";
}

std::string file_identity(const std::filesystem::path& path, const Cache* memo) {
  // By content, not by path and time: the same toolkit installed on another machine (or at
  // another place) is the same tool for the shared cache. A file that is not there is its name.
  std::string identity = file_content_identity(path, memo);
  return identity.empty() ? "absent:" + path.string() : identity;
}

std::optional<CompileResult> served_from(const DirectCache& direct, const Request& request) {
  CacheOrigin origin = CacheOrigin::none;
  std::optional<std::string> hit = request.cache_reads ? direct.get(&origin) : std::nullopt;
  if (!hit) return std::nullopt;
  return CompileResult{.bytes = std::move(*hit),
                       .cached = true,
                       .cached_remotely = origin == CacheOrigin::remote,
                       .programs = 0};
}

std::string file_stamp(const std::filesystem::path& path) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  auto time = std::filesystem::last_write_time(path, ec);
  return fmt::format("{}:{}:{}", path.string(), ec ? 0 : size,
                     ec ? 0 : time.time_since_epoch().count());
}

std::string working_directory_for_key(const Cache& cache) {
  std::error_code ec;
  return cache.relocated(std::filesystem::current_path(ec).string());
}

std::string joined_for_key(const std::vector<std::string>& parts) {
  std::string joined;
  for (const std::string& part : parts) {
    joined += part;
    joined.push_back('\0');
  }
  return joined;
}

}  // namespace internal

Backend backend_from_name(std::string_view name) {
  if (std::optional<Backend> backend = enum_value(kBackendNames, name)) return *backend;
  throw InvalidArgument(fmt::format("cuda compiler must be 'nvcc' or 'nvrtc', got: {}", name));
}

std::string_view backend_name(Backend backend) { return enum_name(kBackendNames, backend); }

Format format_from_name(std::string_view name) {
  if (std::optional<Format> format = enum_value(kFormatNames, name)) return *format;
  throw InvalidArgument(
      fmt::format("target_format must be in cubin, ptx, fatbin, got: '{}'", name));
}

std::string_view format_name(Format format) { return enum_name(kFormatNames, format); }

bool uses_nvshmem(std::string_view code) {
  return code.find("#include <nvshmem.h>") != std::string_view::npos ||
         code.find("#include <nvshmemx.h>") != std::string_view::npos;
}

std::string compile_cuda(std::string_view code, const CompileOptions& options) {
  return compile(code, options).bytes;
}

namespace {

// A failed compile names the user's file (ToolFailed::source_path), whichever backend failed.
ToolFailed naming_the_file(const ToolFailed& failed, const std::filesystem::path& source_path) {
  ToolFailure failure = failed.failure();
  if (failure.source_path.empty()) failure.source_path = source_path;
  return ToolFailed(std::move(failure));
}

// CompileOptions::archs checked and, for NVRTC, turned into the one arch it may hold.
void take_archs(const CompileOptions& options, internal::Request& request) {
  if (options.archs.empty()) return;
  if (!options.arch.empty()) {
    throw InvalidArgument(fmt::format("give the arch ({}) or the archs, not both", options.arch));
  }
  if (options.backend == Backend::nvcc) {
    request.archs = options.archs;
  } else if (options.archs.size() == 1 && internal::is_arch_name(options.archs.front())) {
    request.arch = options.archs.front();
  } else {
    throw InvalidArgument(fmt::format(
        "NVRTC compiles for one arch, not for [{}]: give one arch, or use nvcc for several",
        fmt::join(options.archs, ", ")));
  }
}

}  // namespace

CompileResult compile(std::string_view code, const CompileOptions& options) {
  return internal::compile_or_elsewhere(code, options, {});
}

Format default_format(Backend backend) {
  return backend == Backend::nvcc ? Format::ptx : Format::cubin;
}

Format format_of(std::string_view code, const CompileOptions& options) {
  if (uses_nvshmem(code)) return Format::cubin;
  return options.format.value_or(default_format(options.backend));
}

internal::Request internal::request_of(std::string_view code, const CompileOptions& options) {
  Request request;
  request.code = std::string(code);
  request.arch = options.arch;
  take_archs(options, request);
  request.output = options.output;
  request.options = options.options;
  request.source_path = options.source_path;
  if (options.launcher && options.backend != Backend::nvcc) {
    throw InvalidArgument(
        fmt::format("a launcher ({}) goes in front of nvcc; NVRTC compiles in this process",
                    options.launcher->name));
  }
  request.launcher = options.launcher;
  request.nvshmem = uses_nvshmem(code);
  request.format = format_of(code, options);
  return request;
}

CompileResult internal::compile_or_elsewhere(std::string_view code, const CompileOptions& options,
                                             const NvrtcCall& no_server) {
  Request request = request_of(code, options);
  if (no_server) {
    request.no_server = [&] {
      CompileOptions elsewhere = options;
      elsewhere.output.clear();
      return no_server(code, elsewhere);
    };
  }
  std::optional<Cache> cache;
  std::string warning;
  if (options.use_cache && !internal::env("TVM_KERNEL_DUMP")) {
    try {
      cache = Cache::open();
      if (cache->enabled()) request.cache = &*cache;
      request.cache_reads = options.cache_reads;
    } catch (const Error& e) {  // a miss: the compile goes on uncached (and says why)
      warning = fmt::format("kiln's kernel cache is not used: {}", e.what());
    }
  }
  CompileResult result;
  try {
    result = options.backend == Backend::nvcc ? internal::compile_with_nvcc(request)
                                              : internal::compile_with_nvrtc(request);
  } catch (const ToolFailed& e) {
    throw naming_the_file(e, options.source_path);
  }
  result.warning = std::move(warning);
  if (result.bytes.empty()) throw UnexpectedOutput("Compilation error: empty result is generated");
  if (!options.output.empty()) kiln::internal::write_file_atomically(options.output, result.bytes);
  return result;
}

std::string tvm_callback_cuda_compile(std::string_view code, const std::string& arch) {
  std::string mode = internal::env("TVM_CUDA_COMPILE_MODE").value_or("nvrtc");
  std::transform(mode.begin(), mode.end(), mode.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (mode == "nvrtc") return compile_cuda(code, {.format = Format::cubin, .arch = arch});
  if (mode == "nvcc") {
    return compile_cuda(code, {.format = Format::fatbin, .arch = arch, .backend = Backend::nvcc});
  }
  throw InvalidArgument(
      fmt::format("Invalid TVM_CUDA_COMPILE_MODE: {}. Expected 'nvcc' or 'nvrtc'.", mode));
}

}  // namespace kiln::cuda
