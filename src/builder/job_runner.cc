#include "job_runner.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "distcc_account.h"
#include "icecc_account.h"
#include "internal/files.h"
#include "kiln/cuda.h"
#include "kiln/direct_cache.h"
#include "kiln/elf.h"
#include "kiln/error.h"
#include "kiln/paths.h"
#include "kiln/settings.h"
#include "kiln/temp_directory.h"

namespace kiln::build::detail {
namespace {

namespace fs = std::filesystem;

mode_t output_mode(JobKind kind) {
  return kind == JobKind::executable || kind == JobKind::shared ? 0755 : 0644;
}

// gcc's and clang's words for a crash of the compiler proper, which the driver survives.
bool reports_compiler_crash(std::string_view output) {
  return output.find("internal compiler error") != std::string_view::npos ||
         output.find("PLEASE submit a bug report") != std::string_view::npos;
}

Attempt failed(std::optional<Ending> ending, std::string log, bool compiler_crashed = false) {
  return {.result = Attempt::Result::failed,
          .ending = ending,
          .compiler_crashed = compiler_crashed,
          .log = std::move(log)};
}

// What an exception from making a job says about how it went.
Attempt attempt_of_exception() {
  try {
    throw;
  } catch (const ToolFailed& e) {
    return failed(e.ending(), e.what(), reports_compiler_crash(e.output()));
  } catch (const TimeoutError& e) {  // a pool worker (NVRTC) past the deadline
    return failed(Ending::timed_out(), e.what());
  } catch (const Cancelled& e) {
    return failed(Ending::cancelled(), e.what());
  } catch (const ChildProcessError& e) {  // NVRTC's process died (a server's child, a worker)
    // Unknown how it ended: still a crash, not a failed compile.
    return failed(e.ending(), e.what(), !e.ending().has_value());
  } catch (const ToolNotFound& e) {
    return {.result = Attempt::Result::skipped,
            .log = fmt::format("toolchain absent: {}", e.what())};
  } catch (const TaskError& e) {  // kiln's NVRTC worker's task threw, not a failed compile
    bool kilns = e.type_name().starts_with("kiln::");
    return failed(std::nullopt, kilns ? e.message() : e.what());
  } catch (const std::exception& e) {
    return failed(std::nullopt, e.what());
  }
}

// Where a launcher that accounts for a job in a log of its own writes it: in the job's directory.
fs::path account_log(LauncherKind launcher, const fs::path& work) {
  return work / fmt::format("kiln-{}.log", launcher_name(launcher));
}

// What the tools of a job printed (warnings, ptxas' resource lines), one after the other.
std::string printed(const std::vector<RunScope::Record>& runs) {
  std::string text;
  for (const RunScope::Record& run : runs) {
    if (run.output.empty()) continue;
    if (!text.empty() && !text.ends_with('\n')) text += '\n';
    text += run.output;
  }
  return text;
}

// Stores the output with the headers the compiler reported; nothing when a compile of a source
// left no dependency output (its headers would be unkeyed) or an input changed meanwhile.
void store(const DirectCache& direct, const JobRecipe& prepared, const Workspace& workspace,
           std::string_view bytes) {
  std::vector<fs::path> headers;
  if (!prepared.depfile.empty()) {
    if (!internal::is_file(prepared.depfile)) return;
    headers = parse_depfile(internal::read_file(prepared.depfile), prepared.depfile_cwd);
  } else if (prepared.headers) {
    fs::path scratch = workspace.work_dir / "kiln-headers";
    fs::create_directories(scratch);
    std::optional<std::vector<fs::path>> read = prepared.headers(scratch);
    if (!read) return;
    headers = std::move(*read);
  }
  direct.put(headers, bytes, {workspace.work_dir});
}

// What an output file is, as far as a check of its kind needs: an ELF file's type and machine,
// else its magic.
struct Shape {
  bool elf = false;
  unsigned type = 0, machine = 0;
  std::string_view bytes;
  bool starts(std::string_view magic) const { return bytes.starts_with(magic); }
  bool text() const { return bytes.find('\0') == std::string_view::npos; }
  bool mach_o() const { return starts("\xcf\xfa\xed\xfe") || starts("\xce\xfa\xed\xfe"); }
  bool bitcode() const { return starts("BC\xc0\xde") || starts("\xde\xc0\x17\x0b"); }
  bool wasm() const { return starts(std::string_view("\0asm", 4)); }
};

Shape shape_of(std::string_view bytes) {
  Shape shape{.bytes = bytes};
  if (bytes.size() >= 20 && bytes.starts_with("\x7f"
                                              "ELF")) {
    auto at = [&](size_t i) { return static_cast<unsigned>(static_cast<unsigned char>(bytes[i])); };
    bool little = at(5) == 1;
    shape.elf = true;
    shape.type = little ? at(16) | (at(17) << 8) : (at(16) << 8) | at(17);
    shape.machine = little ? at(18) | (at(19) << 8) : (at(18) << 8) | at(19);
  }
  return shape;
}

std::string described(const Shape& s) {
  if (s.elf) {
    const char* types[] = {"", "relocatable object", "executable", "shared object"};
    return fmt::format("an ELF {} for {}", s.type >= 1 && s.type <= 3 ? types[s.type] : "file",
                       elf_machine_name(static_cast<ElfMachine>(s.machine)));
  }
  if (s.starts("!<arch>\n")) return "a static library";
  if (s.wasm()) return "WebAssembly";
  if (s.bitcode()) return "LLVM bitcode";
  if (s.mach_o()) return "a Mach-O file";
  if (s.text()) return "text";
  return fmt::format("{} bytes of no format kiln knows", s.bytes.size());
}

constexpr unsigned kEmCuda = 190, kEmAmdgpu = 224;

// Whether `s` can be the output of `job`, by its kind (and format).
bool fits(const Job& job, const Shape& s) {
  bool host_elf = s.elf && s.machine != kEmCuda && s.machine != kEmAmdgpu;
  switch (job.kind) {
    case JobKind::object:
      return (host_elf && s.type == 1) || s.bitcode() || s.wasm() || s.mach_o();
    case JobKind::shared:
      return (host_elf && s.type == 3) || s.wasm() || s.mach_o();
    case JobKind::executable:
      return (host_elf && (s.type == 2 || s.type == 3)) || s.wasm() || s.mach_o() || s.starts("#!");
    case JobKind::static_library:
      return s.starts("!<arch>\n") || s.starts("!<thin>\n");
    case JobKind::llvm_ir:
      return !s.elf && s.text();
    case JobKind::cuda:
      switch (job.format) {
        case cuda::Format::ptx:
          return !s.elf && s.text();
        case cuda::Format::cubin:
          return s.elf && s.machine == kEmCuda;
        case cuda::Format::fatbin:
          return s.starts("\x50\xed\x55\xba");
      }
      return false;
    case JobKind::rocm_code_object:
      return s.elf && s.machine == kEmAmdgpu;
    case JobKind::wasm:
      return s.wasm();
    case JobKind::tar:
      // Compressed (gzip, xz, zstd, bzip2) or not.
      return s.starts("\x1f\x8b") ||
             s.starts(
                 "\xfd"
                 "7zXZ") ||
             s.starts("\x28\xb5\x2f\xfd") || s.starts("BZh") ||
             (s.bytes.size() >= 262 && s.bytes.substr(257, 5) == "ustar") ||
             (!s.bytes.empty() && s.bytes.find_first_not_of('\0') == std::string_view::npos);
  }
  return false;
}

// The check of a remote hit for `job` (Cache::with_remote_check): the direct cache's entry is
// its headers' lines, an empty line, then the output (kiln/direct_cache.h).
std::function<std::optional<std::string>(std::string_view)> kind_check(const Job& job) {
  return [&job](std::string_view entry) -> std::optional<std::string> {
    size_t start = entry.starts_with('\n') ? 1 : entry.find("\n\n");
    if (start == std::string_view::npos) return std::nullopt;  // not one: DirectCache refuses it
    if (start != 1) start += 2;
    Shape shape = shape_of(entry.substr(start));
    if (fits(job, shape)) return std::nullopt;
    std::string wanted(kind_name(job.kind));
    if (job.kind == JobKind::cuda) wanted = std::string(cuda::format_name(job.format));
    return fmt::format("{}, not what a {} job makes", described(shape), wanted);
  };
}

// The build's cache: a cache that cannot be opened is a miss for every job, with `warning` saying
// why, never a failed build (a planted or unsafe directory is still not used). Paths under the
// manifest's directory ($KILN_BASE_DIR when set) are keyed relative to it.
Cache open_cache(bool wanted, const fs::path& manifest_directory, std::string& warning) {
  if (!wanted) return Cache::disabled();
  try {
    CacheOptions options;
    options.base_directory = settings::text("KILN_BASE_DIR").value_or(manifest_directory.string());
    return Cache::open(options);
  } catch (const Error& e) {
    warning = fmt::format("kiln's kernel cache is not used: {}", e.what());
    return Cache::disabled();
  }
}

}  // namespace

BuildRunner::BuildRunner(const Manifest& manifest, const Options& options, int threads,
                         std::vector<Route> routes, std::unique_ptr<SccacheServers> sccache)
    : manifest_(manifest),
      options_(options),
      index_(index_by_name(manifest)),
      out_dir_(fs::absolute(options.out_dir)),
      cache_(open_cache(options.use_cache, manifest.directory, cache_warning_)),
      tools_(cache_),
      routes_(std::move(routes)),
      sccache_(std::move(sccache)) {
  bool nvrtc = std::any_of(manifest.jobs.begin(), manifest.jobs.end(), [](const Job& job) {
    return job.kind == JobKind::cuda && job.backend == cuda::Backend::nvrtc;
  });
  for (int t = 0; t < threads; ++t) {
    pool::WorkerOptions worker;
    if (nvrtc) {
      nvrtc_temp_dirs_.emplace_back(TempDirectoryOptions{
          .custom_path = out_dir_ / fmt::format("{}{}-nvrtc{}", kTempPrefix, ::getpid(), t)});
      worker.env["TMPDIR"] = nvrtc_temp_dirs_.back().path().string();
      // A worker compiles only what the server could not take: in its own process, at once.
      worker.env["KILN_NO_SERVER"] = std::string("1");  // not a literal: GCC 12 -Wrestrict
    }
    nvrtc_workers_.push_back(std::make_unique<pool::Worker>(std::move(worker)));
  }
  work_dirs_.resize(static_cast<size_t>(std::max(threads, 0)));
  // All before the first compile (sccache_servers.h says why).
  if (sccache_ && threads > 0) sccache_->start(threads);
}

Launcher::Environment BuildRunner::launcher_env(const Route& route, int worker,
                                                const fs::path& work) {
  if (route.launcher == LauncherKind::sccache && sccache_) return sccache_->client_env(worker);
  if (route.launcher == LauncherKind::distcc) {
    return distcc_log_env(account_log(LauncherKind::distcc, work));
  }
  if (route.launcher == LauncherKind::icecc) {
    return icecc_log_env(account_log(LauncherKind::icecc, work));
  }
  return {};
}

void BuildRunner::perform_and_account(const Recipe& recipe, const Route& route, int worker,
                                      const fs::path& work, Attempt& attempt) {
  attempt.engine = route.launcher;
  if (!route.why_local.empty()) attempt.account = {.ran = "local", .detail = route.why_local};
  std::function<EngineAccount()> account;
  if (route.launcher == LauncherKind::sccache && sccache_) {
    account = [this, worker, before = stats_of(worker)] {
      return sccache_account(before, stats_of(worker));
    };
  } else if (route.launcher == LauncherKind::distcc || route.launcher == LauncherKind::icecc) {
    account = [log = account_log(*route.launcher, work),
               icecc = route.launcher == LauncherKind::icecc] {
      std::string text = internal::is_file(log) ? internal::read_file(log) : "";
      return icecc ? icecc_account(text) : distcc_account(text);
    };
  }
  if (!account) {
    perform(recipe);
    return;
  }
  try {
    perform(recipe);
  } catch (...) {
    // The job's own error is what it ended with: an account that cannot be had loses it not.
    try {
      attempt.account = account();
    } catch (const Error&) {
    }
    throw;
  }
  attempt.account = account();
}

sccache::Stats BuildRunner::stats_of(int worker) {
  // A query of its own, not one of the job's runs: limited by its own limit, not the job's
  // deadline, which a job that timed out has passed ("timed out after 0s").
  const RunScope* job = RunScope::current();
  RunScope own({.cancel_fd = job != nullptr ? job->limits().cancel_fd : -1});
  return sccache_->stats(worker);
}

const fs::path& BuildRunner::work_dir(int worker) {
  std::optional<TempDirectory>& dir = work_dirs_[static_cast<size_t>(worker)];
  if (!dir) {
    dir.emplace(TempDirectoryOptions{
        .custom_path = out_dir_ / fmt::format("{}{}-w{}", kTempPrefix, ::getpid(), worker)});
  }
  return dir->path();
}

std::vector<fs::path> BuildRunner::inputs_of(std::size_t index) const {
  std::vector<fs::path> inputs;
  for (const Input& input : manifest_.jobs[index].inputs) {
    inputs.push_back(input.job.empty() ? input.file : output_of(index_.at(input.job)));
  }
  return inputs;
}

fs::path BuildRunner::output_of(std::size_t index) const {
  return out_dir_ / manifest_.jobs[index].output_name();
}

Attempt BuildRunner::run(std::size_t index, const RunScope::Limits& limits, int worker) {
  RunScope scope(limits);          // finding the tools runs them too (--version): under the limits
  std::optional<RunScope> making;  // the job's own tool runs, apart from those probes
  Attempt attempt;
  Attempt where;
  try {
    attempt = make(index, limits, worker, making, where);
  } catch (...) {
    attempt = attempt_of_exception();
  }
  attempt.engine = where.engine;
  attempt.account = std::move(where.account);
  if (making) {  // tool probes (--version) are not the job's commands
    for (const auto& record : making->runs()) attempt.commands.push_back(record.command_line);
  }
  return attempt;
}

Attempt BuildRunner::make(std::size_t index, const RunScope::Limits& limits, int worker,
                          std::optional<RunScope>& making, Attempt& where) {
  const Job& job = manifest_.jobs[index];
  const fs::path& work = work_dir(worker);
  struct Emptied {  // on every way out, the next job finds the directory empty
    const fs::path& dir;
    ~Emptied() {
      std::error_code ec;
      for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        fs::remove_all(it->path(), ec);
      }
    }
  } emptied{work};
  std::vector<fs::path> inputs = inputs_of(index);
  KeyedFiles files(job.sources, inputs);
  Workspace workspace{.work_dir = work,
                      .output = work / job.output_name(),
                      .out_dir = out_dir_,
                      .inputs = std::move(inputs),
                      .nvrtc_worker = nvrtc_workers_[static_cast<size_t>(worker)].get(),
                      .files = &files,
                      .cache = &cache_};
  const Route& route = routes_[index];
  workspace.launcher_env = launcher_env(route, worker, work);
  JobRecipe prepared = prepare(job, options_, workspace, tools_);
  if (!prepared.skip_reason.empty()) {
    return {.result = Attempt::Result::skipped, .log = prepared.skip_reason};
  }
  fs::path output = output_of(index);
  std::optional<Cache> checked;       // what `direct` reads through: remote hits of another kind
  std::optional<DirectCache> direct;  // before the compile: it hashes the sources as they are
  if (cache_.enabled() && prepared.recipe.cacheable) {
    checked.emplace(cache_.with_remote_check(kind_check(job)));
    direct.emplace(*checked, build_key(job, prepared, workspace), files.hashes());
    CacheOrigin origin = CacheOrigin::none;
    if (std::optional<std::string> bytes = direct->get(&origin)) {
      internal::write_file_atomically(output, *bytes, output_mode(job.kind));
      return {.result = Attempt::Result::from_cache,
              .output = output,
              .from_remote = origin == CacheOrigin::remote};
    }
  }
  making.emplace(limits);
  perform_and_account(prepared.recipe, route, worker, work, where);
  std::string log = printed(making->runs());  // not what a header scan for the cache prints
  const fs::path& made = workspace.output;
  std::string bytes = internal::read_file(made, "the job made no output");
  if (direct) store(*direct, prepared, workspace, bytes);
  ::chmod(made.c_str(), output_mode(job.kind));
  internal::move_into_place(made, output);
  return {.result = Attempt::Result::made, .output = output, .log = std::move(log)};
}

}  // namespace kiln::build::detail
