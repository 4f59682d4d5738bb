// pch_spec(), open_pch(), make_pch() and attempt_with_pch() (nvrtc_pch.h): the precompiled
// headers a compile server keeps in its private directory.
#include "nvrtc_pch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "internal/files.h"
#include "kiln/cache.h"
#include "kiln/file_lock.h"
#include "nvrtc_library.h"

namespace kiln::cuda::internal {
namespace {

namespace fs = std::filesystem;
using kiln::internal::UniqueFd;

constexpr std::string_view kManifestMagic = "kiln-pch-1";

std::string manifest_name(const std::string& key) { return key + ".files"; }

// The manifest's text: the magic line, the PCH's name, then "file <digest> <path>" and
// "absent <path>" lines. Paths with a newline are never written (such a PCH is not kept).
std::string manifest_text(const std::string& pch_name, const PchInputs& inputs) {
  std::string text = fmt::format("{}\n{}\n", kManifestMagic, pch_name);
  for (const auto& [file, digest] : inputs.files) {
    text += fmt::format("file {} {}\n", digest, file.string());
  }
  for (const fs::path& place : inputs.absent) text += fmt::format("absent {}\n", place.string());
  return text;
}

struct Manifest {
  std::string pch_name;
  PchInputs inputs;
};

std::optional<Manifest> read_manifest(const fs::path& path) {
  std::string text;
  try {
    text = kiln::internal::read_file(path);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::istringstream in(text);
  std::string magic;
  Manifest manifest;
  if (!std::getline(in, magic) || magic != kManifestMagic || !std::getline(in, manifest.pch_name)) {
    return std::nullopt;
  }
  for (std::string line; std::getline(in, line);) {
    size_t space = line.find(' ', 5);
    if (line.starts_with("absent ")) {
      manifest.inputs.absent.emplace_back(line.substr(7));
    } else if (line.starts_with("file ") && space != std::string::npos) {
      manifest.inputs.files.emplace_back(line.substr(space + 1), line.substr(5, space - 5));
    } else {
      return std::nullopt;
    }
  }
  return manifest;
}

// The kernel cache's size (the server's directory is in it: <cache>/servers/<name>.d).
std::uint64_t cache_budget() { return CacheOptions{}.max_bytes; }

// Whether `path` was last changed over a minute ago: a PCH file and its manifest are put in
// place one after the other, so a lone one may be the half of a pair being made.
bool settled(const fs::directory_entry& entry) {
  std::error_code ec;
  return entry.last_write_time(ec) < fs::file_time_type::clock::now() - std::chrono::minutes(1);
}

// Keeps at most `files` PCH files taking at most `bytes`, the least recently used going first;
// PCH files no manifest names any longer (remade since) and manifests whose PCH is gone go too.
void evict_pch(const fs::path& dir, size_t files, std::uint64_t bytes) {
  struct Kept {
    fs::file_time_type used;
    fs::path path;
    std::uint64_t size;
  };
  std::vector<Kept> kept;
  std::uint64_t total = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const fs::path& path = entry.path();
    if (path.extension() == ".files") {
      std::optional<Manifest> manifest = read_manifest(path);
      if ((!manifest || !kiln::internal::is_file(dir / manifest->pch_name)) && settled(entry)) {
        fs::remove(path, ec);
      }
      continue;
    }
    if (path.extension() != ".pch") continue;
    std::string key = path.stem().string().substr(0, path.stem().string().find('-'));
    std::optional<Manifest> manifest = read_manifest(dir / manifest_name(key));
    if (!manifest || manifest->pch_name != path.filename().string()) {
      if (settled(entry)) fs::remove(path, ec);  // made again since: no compile will ask for it
      continue;
    }
    std::uint64_t size = entry.file_size(ec);
    kept.push_back({entry.last_write_time(ec), path, size});
    total += size;
  }
  std::sort(kept.begin(), kept.end(), [](const Kept& a, const Kept& b) { return a.used < b.used; });
  size_t count = kept.size();
  for (const Kept& file : kept) {
    if (count <= files && total <= bytes) break;
    if (fs::remove(file.path, ec)) --count, total -= file.size;
  }
}

// After a PCH was kept: the whole kernel cache within its size too (entries and every server's
// precompiled headers, kiln/cache.h).
void trim_cache(const fs::path& dir) {
  try {
    Cache::open({.directory = dir.parent_path().parent_path(), .enabled = true}).trim();
  } catch (const std::exception&) {  // a cache that cannot be opened holds nothing to trim
  }
}

// Whether each path of `inputs` fits on a line of a manifest.
bool one_line_each(const PchInputs& inputs) {
  auto one_line = [](const fs::path& path) {
    return path.string().find('\n') == std::string::npos;
  };
  return std::all_of(inputs.files.begin(), inputs.files.end(),
                     [&](const auto& file) { return one_line(file.first); }) &&
         std::all_of(inputs.absent.begin(), inputs.absent.end(), one_line);
}

// Puts the PCH NVRTC made at `made` in place, named by its manifest's digest, then the manifest
// (a reader sees the old manifest, naming the old PCH, or the new one, whose PCH is there).
void keep(const fs::path& dir, const fs::path& made, const PchSpec& spec, const PchInputs& inputs) {
  std::string digest = cache_key({manifest_text("", inputs)}).substr(0, 16);
  std::string name = fmt::format("{}-{}.pch", spec.key, digest);
  std::error_code ec;
  fs::rename(made, dir / name, ec);
  if (ec) return;
  try {
    kiln::internal::write_file_atomically(dir / manifest_name(spec.key),
                                          manifest_text(name, inputs));
  } catch (const std::exception&) {
    fs::remove(dir / name, ec);
  }
}

bool forced_include(const std::vector<std::string>& options) {
  return std::any_of(options.begin(), options.end(), [](const std::string& option) {
    return option.starts_with("-include") || option.starts_with("--pre-include");
  });
}

}  // namespace

PchSpec pch_spec(const std::string& source, size_t prefix, const std::vector<std::string>& options,
                 const std::vector<fs::path>& toolkit_dirs) {
  if (forced_include(options) || prefix == 0 || prefix > source.size() ||
      nvrtc_version() < std::pair{12, 8}) {
    return {};
  }
  IncludeSearch search(options, toolkit_dirs);
  std::error_code ec;
  std::string cwd = search.relative() ? fs::current_path(ec).string() : "";
  std::string dirs;
  for (const fs::path& dir : toolkit_dirs) dirs += dir.string() + '\n';
  std::string_view text = std::string_view(source).substr(0, prefix);
  return {.key = cache_key({"pch-2", text, joined_for_key(options), cwd, dirs}),
          .prefix = std::string(text),
          .options = options,
          .toolkit_dirs = toolkit_dirs};
}

std::optional<OpenPch> open_pch(const fs::path& dir, const PchSpec& spec) {
  if (spec.key.empty()) return std::nullopt;
  std::optional<Manifest> manifest = read_manifest(dir / manifest_name(spec.key));
  if (!manifest || !still_the_same(manifest->inputs)) return std::nullopt;
  fs::path pch = dir / manifest->pch_name;
  UniqueFd fd(kiln::internal::retry_eintr(
      [&] { return ::open(pch.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW); }));
  if (!fd) return std::nullopt;  // evicted or cleared meanwhile: made again after this compile
  (void)::futimens(fd.get(), nullptr);  // used now: the least recently used go first
  std::string through_fd = fmt::format("/proc/self/fd/{}", fd.get());
  std::string path = ::access(through_fd.c_str(), R_OK) == 0 ? through_fd : pch.string();
  return OpenPch{std::move(fd), std::move(path)};
}

void make_pch(const fs::path& dir, const PchSpec& spec) {
  fs::path lock_path = dir / (spec.key + ".lock");
  std::optional<FileLock> making;
  try {
    making = FileLock::try_lock(lock_path);
  } catch (const std::exception&) {  // the directory is gone: the server is ending
    return;
  }
  if (!making || open_pch(dir, spec)) return;  // being made, or made meanwhile
  std::optional<PchInputs> inputs =
      pch_inputs(spec.prefix, IncludeSearch(spec.options, spec.toolkit_dirs));
  std::uint64_t budget = cache_budget() / 4;
  if (inputs && one_line_each(*inputs)) {
    evict_pch(dir, kMaxPchFiles - 1, budget);
    fs::path made = dir / fmt::format("{}.{}.tmp", spec.key, ::getpid());
    std::vector<std::string> options = spec.options;
    options.push_back("--create-pch=" + made.string());
    options.emplace_back("--pch-messages=false");
    (void)attempt_nvrtc(spec.prefix, "kiln_pch.cu", options, false);
    // Kept only when nothing it may have read changed since its manifest was made.
    if (kiln::internal::is_file(made) && still_the_same(*inputs)) keep(dir, made, spec, *inputs);
    std::error_code ec;
    fs::remove(made, ec);
    evict_pch(dir, kMaxPchFiles, budget);
  }
  std::error_code ec;
  fs::remove(lock_path, ec);
  making.reset();
  trim_cache(dir);
}

NvrtcAttempt attempt_with_pch(const std::string& source, const std::string& name,
                              const std::vector<std::string>& options, bool cubin,
                              const std::optional<OpenPch>& pch) {
  if (!pch) return attempt_nvrtc(source, name, options, cubin);
  std::vector<std::string> with = options;
  with.push_back("--use-pch=" + pch->path);
  with.emplace_back("--pch-messages=false");
  NvrtcAttempt attempt = attempt_nvrtc(source, name, with, cubin);
  bool unreadable = attempt.result != 0 && attempt.failed_call.empty() &&
                    attempt.log.find("precompiled header file") != std::string::npos;
  return unreadable ? attempt_nvrtc(source, name, options, cubin) : attempt;
}

}  // namespace kiln::cuda::internal
