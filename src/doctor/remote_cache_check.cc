// kiln doctor's check of the remote cache ($KILN_REMOTE_CACHE): reachable, credentials accepted,
// objects written (read-write) and read back, and the round trip's latency.
#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "internal/sha256.h"
#include "kiln/cache.h"
#include "kiln/doctor.h"
#include "kiln/remote_store.h"

namespace kiln::doctor {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kCheck = "remote cache";

// Median milliseconds of `rounds` lookups of an object no one stores.
double median_round_trip_ms(RemoteStore& store, int rounds) {
  std::vector<double> ms;
  std::string absent = internal::sha256_hex("kiln doctor: an object nobody stores");
  for (int i = 0; i < rounds; ++i) {
    auto start = Clock::now();
    (void)store.contains("ac", absent);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Writes a probe object, reads it back and removes it; "" when all went well, else what did not.
std::string write_probe(RemoteStore& store) {
  std::random_device random;
  std::string bytes = fmt::format("kiln doctor probe {:08x}{:08x}\n", random(), random());
  std::string name = internal::sha256_hex(bytes);
  store.put("cas", name, bytes);
  std::optional<std::string> back = store.get("cas", name);
  store.remove("cas", name);
  if (!back) return "an object it accepted was not there when read back";
  if (*back != bytes) return "an object it accepted came back with other bytes";
  return "";
}

}  // namespace

std::vector<Finding> check_remote_cache() {
  std::optional<RemoteCacheOptions> remote;
  try {
    remote = RemoteCacheOptions::from_environment();
  } catch (const InvalidArgument& e) {
    return {{std::string(kCheck), Status::fail, e.what(),
             "set KILN_REMOTE_CACHE_MODE to read-only or read-write, KILN_REMOTE_CACHE_TIMEOUT "
             "to seconds"}};
  }
  if (!remote) return {};
  std::string name = redacted_url(remote->url);
  std::string mode = remote->read_write ? "read-write" : "read-only";
  Finding f{std::string(kCheck), Status::pass, "", ""};
  try {
    std::unique_ptr<RemoteStore> store = open_remote_store(RemoteStoreOptions::for_cache(*remote));
    double ms = median_round_trip_ms(*store, 5);
    std::string wrote = "read";
    if (remote->read_write) {
      if (std::string problem = write_probe(*store); !problem.empty()) {
        f.status = Status::fail;
        f.finding = fmt::format("{} ({}): {}", name, mode, problem);
        f.fix = "check that the server stores what it is sent (a WebDAV server needs PUT)";
        return {f};
      }
      wrote = "wrote, read back and removed a probe object";
    }
    f.finding = fmt::format(
        "{} ({}): reachable, credentials accepted, {}; a lookup takes {:.2f} "
        "ms (median of 5)",
        name, mode, wrote, ms);
    if (ms > 50) {
      f.status = Status::warn;
      f.fix = "a lookup this slow costs every cache miss as much: a server nearer the builds";
    }
  } catch (const Error& e) {
    f.status = Status::fail;
    f.finding = fmt::format("{} ({}): {}", name, mode, e.what());
    f.fix =
        "check KILN_REMOTE_CACHE (the server's URL), KILN_REMOTE_CACHE_CREDENTIALS (a file with "
        "\"user:password\" or a token) and KILN_REMOTE_CACHE_CA; builds go on with the local "
        "cache meanwhile (docs/remote-cache.md)";
  }
  return {f};
}

}  // namespace kiln::doctor
