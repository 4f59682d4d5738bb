// compile_in_parts() (nvrtc_parallel.h).
#include "nvrtc_parallel.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernel_split.h"
#include "kiln/process.h"
#include "kiln/settings.h"
#include "nvrtc_server.h"
#include "ptx_merge.h"
#include "ptxas.h"

namespace kiln::cuda::internal {
namespace {

// Options that change only what the front end and NVVM do (ptxas is given the PTX they make).
constexpr std::string_view kFrontEndOnly[] = {"-default-device",
                                              "--device-int128",
                                              "--use_fast_math",
                                              "-use_fast_math",
                                              "-w",
                                              "--disable-warnings",
                                              "--display-error-number",
                                              "--no-display-error-number",
                                              "--extra-device-vectorization",
                                              "-extra-device-vectorization"};
// The same, with a value after '=' (or, for -I, -D, -U, right after the letter).
constexpr std::string_view kFrontEndOnlyWithValue[] = {"--gpu-architecture=",
                                                       "-arch=",
                                                       "-I",
                                                       "-D",
                                                       "-U",
                                                       "--include-path=",
                                                       "--define-macro=",
                                                       "--undefine-macro=",
                                                       "--pre-include=",
                                                       "-std=",
                                                       "--std=",
                                                       "--diag-suppress=",
                                                       "--diag-error=",
                                                       "--diag-warn=",
                                                       "-diag-suppress=",
                                                       "-diag-error=",
                                                       "-diag-warn="};
// The same, with the value in the next option.
constexpr std::string_view kFrontEndOnlyThenValue[] = {
    "-I",           "-D", "-U", "-include", "--include-path", "--define-macro", "--undefine-macro",
    "--pre-include"};

bool listed(std::string_view option) {
  return std::find(std::begin(kFrontEndOnly), std::end(kFrontEndOnly), option) !=
             std::end(kFrontEndOnly) ||
         std::any_of(std::begin(kFrontEndOnlyWithValue), std::end(kFrontEndOnlyWithValue),
                     [&](std::string_view prefix) { return option.starts_with(prefix); });
}

void debug(const std::string& line) {
  if (settings::flag("KILN_SERVER_DEBUG")) fmt::print(stderr, "kiln: {}\n", line);
}

// Says why the module is compiled whole (KILN_SERVER_DEBUG=1).
std::nullopt_t whole(const std::string& why) {
  debug("NVRTC compiles the module of several kernels as one program: " + why);
  return std::nullopt;
}

// The bytes a split must spare: KILN_NVRTC_SPLIT's (its default: kMinSparedBytes; 0: never
// split).
size_t min_spared_bytes() {
  std::uint64_t bytes = settings::bytes("KILN_NVRTC_SPLIT").value_or(kMinSparedBytes);
  return bytes == 0 ? std::numeric_limits<size_t>::max() : static_cast<size_t>(bytes);
}

// The groups the module's kernels go into (at most one per compile the server runs at once, each
// of at least `spared` bytes), or none when they would not spare that much.
std::vector<std::vector<size_t>> groups_of(const std::vector<KernelSpan>& kernels, size_t spared) {
  size_t total = 0;
  for (const KernelSpan& kernel : kernels) total += kernel.size();
  size_t most = std::max<size_t>(1, total / spared);
  auto groups = balanced_groups(kernels, std::min(server_slots(), most));
  size_t largest = 0;
  for (const auto& group : groups) {
    size_t bytes = 0;
    for (size_t kernel : group) bytes += kernels[kernel].size();
    largest = std::max(largest, bytes);
  }
  if (groups.size() < 2 || total - largest < spared) return {};
  return groups;
}

// The NVRTC program of one group: the module less the other groups' kernels, compiled to PTX with
// the plan's options less those for ptxas.
NvrtcJob part_job(const Request& request, const NvrtcPlan& plan,
                  const std::vector<KernelSpan>& kernels, const std::vector<size_t>& group) {
  Request part = request;
  part.code = with_kernels_only(request.code, kernels, group);
  part.format = Format::ptx;
  std::string arch = spelled_arch(part);
  std::vector<std::string> options;
  for (const std::string& option : nvrtc_options(part, arch)) {
    if (!option.starts_with("--ptxas-options=")) options.push_back(option);
  }
  NvrtcSource prepared = prepared_source(part, arch, options, plan.toolkit_dirs);
  NvrtcJob job{.source = std::move(prepared.text),
               .header_prefix = prepared.header_prefix,
               .name = plan.name,
               .options = std::move(options),
               .cubin = false};
  for (const auto& dir : plan.toolkit_dirs) job.toolkit_dirs.push_back(dir.string());
  return job;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Each job in the compile server, all at once, each from a thread under the caller's RunScope's
// limits. The first exception a part threw is rethrown once every part ended.
std::vector<std::optional<NvrtcAttempt>> compile_all_in_server(const std::vector<NvrtcJob>& jobs,
                                                               std::vector<double>* seconds) {
  std::vector<std::optional<NvrtcAttempt>> attempts(jobs.size());
  seconds->assign(jobs.size(), 0.0);
  std::vector<std::exception_ptr> errors(jobs.size());
  const RunScope* scope = RunScope::current();
  std::optional<RunScope::Limits> limits;
  if (scope != nullptr) limits = scope->limits();
  {
    std::vector<std::jthread> threads;
    for (size_t i = 0; i < jobs.size(); ++i) {
      threads.emplace_back([&, i] {
        try {
          std::optional<RunScope> inherited;
          if (limits) inherited.emplace(*limits);
          auto start = std::chrono::steady_clock::now();
          attempts[i] = compile_in_server(jobs[i]);
          (*seconds)[i] = seconds_since(start);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      });
    }
  }
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  return attempts;
}

// The release that made NVRTC's PTX, once a part told it (no ptxas of another release is tried).
std::string& nvrtc_release() {
  static auto* release = new std::string;  // NOLINT(cppcoreguidelines-owning-memory)
  return *release;
}
std::mutex release_mutex;

}  // namespace

std::optional<std::vector<std::string>> ptxas_flags_if_splittable(
    const std::vector<std::string>& options) {
  std::vector<std::string> flags;
  for (size_t i = 0; i < options.size(); ++i) {
    const std::string& option = options[i];
    bool value_follows =
        std::find(std::begin(kFrontEndOnlyThenValue), std::end(kFrontEndOnlyThenValue), option) !=
        std::end(kFrontEndOnlyThenValue);
    if (option.starts_with("--ptxas-options=")) {
      flags.push_back(option.substr(std::strlen("--ptxas-options=")));
    } else if ((option == "-Xptxas" || option == "--ptxas-options") && i + 1 < options.size()) {
      flags.push_back(options[++i]);
    } else if (value_follows && i + 1 < options.size()) {
      ++i;
    } else if (!listed(option)) {
      return std::nullopt;
    }
  }
  return flags;
}

std::optional<CompileResult> compile_in_parts(const Request& request, const NvrtcPlan& plan) {
  size_t spared = min_spared_bytes();
  if (!plan.cubin || request.nvshmem || plan.dump_dir ||
      spared == std::numeric_limits<size_t>::max()) {
    return std::nullopt;
  }
  std::optional<std::vector<std::string>> flags = ptxas_flags_if_splittable(plan.options);
  if (!flags) return std::nullopt;
  std::optional<std::vector<KernelSpan>> kernels = kernel_definitions(request.code);
  if (!kernels) return std::nullopt;
  std::vector<std::vector<size_t>> groups = groups_of(*kernels, spared);
  if (groups.empty()) return std::nullopt;
  if (std::optional<std::string> use = unsplittable(request.code)) {
    return whole("its code uses " + *use);
  }
  std::string why;
  {
    std::lock_guard lock(release_mutex);
    std::string known = nvrtc_release();
    if (!known.empty() && !matching_ptxas("// " + known + "\n", &why)) return whole(why);
  }
  std::vector<NvrtcJob> jobs;
  for (const auto& group : groups) jobs.push_back(part_job(request, plan, *kernels, group));
  std::vector<double> seconds;
  std::vector<std::optional<NvrtcAttempt>> attempts = compile_all_in_server(jobs, &seconds);
  std::vector<std::string> ptx;
  std::vector<std::string> logs;
  for (std::optional<NvrtcAttempt>& attempt : attempts) {
    if (!attempt || attempt->result != 0) {
      return whole(attempt ? "a part did not compile"
                           : "the compile server did not take every part");
    }
    if (std::string name = program_dependent_name(attempt->bytes); !name.empty()) {
      return whole(fmt::format(
          "a part defines {}, a name NVVM derives from the program, not the source (internal "
          "linkage: an anonymous namespace, a static function or its static variable; or a "
          "string or constant it numbers): each part would hold a copy of its own",
          name));
    }
    ptx.push_back(std::move(attempt->bytes));
    logs.push_back(std::move(attempt->log));
  }
  {
    std::lock_guard lock(release_mutex);
    nvrtc_release() = ptx_compiler_release(ptx.front());
  }
  std::optional<std::string> merged = merged_ptx(ptx);
  std::optional<std::filesystem::path> ptxas =
      merged ? matching_ptxas(ptx.front(), &why) : std::nullopt;
  auto ptxas_start = std::chrono::steady_clock::now();
  std::optional<PtxasOutput> out =
      ptxas ? run_ptxas(*ptxas, *merged, plan.arch, *flags, &why) : std::nullopt;
  if (!out) return whole(merged ? why : "the parts' PTX could not be merged");
  logs.push_back(std::move(out->log));
  debug(fmt::format("NVRTC compiled the module as {} programs at once ({:.2f} s; ptxas {:.2f} s)",
                    jobs.size(), fmt::join(seconds, " s, "), seconds_since(ptxas_start)));
  return CompileResult{
      .bytes = std::move(out->cubin), .log = users_log(merged_logs(logs)), .programs = jobs.size()};
}

}  // namespace kiln::cuda::internal
