// kiln cache stats|clear: where kiln's kernel cache is, how big, how often it hit (locally and on
// the remote level), or empty it.
#include <iostream>

#include <fmt/format.h>

#include "commands.h"
#include "kiln/cache.h"

namespace kiln::cli {

void add_cache(CLI::App& app, int* status) {
  CLI::App* cache = app.add_subcommand("cache", "kiln's kernel cache");
  cache->require_subcommand(1);
  CLI::App* stats = cache->add_subcommand(
      "stats", "Where the cache is, how many entries, how big, and its hits and misses");
  stats->callback([status] {
    require_no_passthrough("cache stats");
    Cache c = Cache::open();
    if (!c.enabled()) {
      std::cout << "the cache is off (KILN_NO_CACHE is set)\n";
    } else {
      Cache::Stats s = c.stats();
      std::cout << fmt::format(
          "directory  {}\nentries    {}\nbytes      {}\nservers    {} files, {} bytes (the "
          "compile servers' precompiled headers)\nmax bytes  {} (entries and precompiled "
          "headers)\ntemporary  {} files, {} bytes (being written, or left by killed writers "
          "until reaped)\n",
          c.directory().string(), s.entries, s.bytes, s.server_files, s.server_bytes, c.max_bytes(),
          s.temporary_files, s.temporary_bytes);
      std::string remote = c.remote_description();
      std::cout << fmt::format(
          "lookups    (every kiln process since the last `kiln cache clear`)\n"
          "  local hits      {}\n  local misses    {}\n"
          "remote     {}\n"
          "  remote hits     {}\n  remote misses   {}\n  remote errors   {}\n"
          "  remote rejected {} (objects whose content did not match their hash)\n"
          "  uploads         {}\n  bytes down      {}\n  bytes up        {}\n",
          s.local_hits, s.local_misses,
          remote.empty() ? "none (set KILN_REMOTE_CACHE; docs/remote-cache.md)" : remote,
          s.remote.hits, s.remote.misses, s.remote.errors, s.remote.rejected, s.remote.uploads,
          s.remote.bytes_down, s.remote.bytes_up);
    }
    *status = kExitOk;
  });
  CLI::App* clear = cache->add_subcommand(
      "clear",
      "Remove every entry, the compile servers' precompiled headers and the counters (never "
      "what a remote cache holds)");
  clear->callback([status] {
    require_no_passthrough("cache clear");
    Cache c = Cache::open();
    Cache::Stats before = c.stats();
    c.clear();
    std::cout << fmt::format(
        "removed {} entries ({} bytes) and {} compile server files ({} bytes) from {}\n",
        before.entries, before.bytes, before.server_files, before.server_bytes,
        c.enabled() ? c.directory().string() : "(off)");
    *status = kExitOk;
  });
}

}  // namespace kiln::cli
