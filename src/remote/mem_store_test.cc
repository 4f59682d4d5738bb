// The registry of remote backends (internal/backend_registry.h): what it lists, what a URL of a
// scheme it lacks is told, and a backend added from outside the table, in this one file and one
// row: mem://<shelf>, objects in a map of this process, which a Cache then uses end to end as
// its second level, exactly as it uses Redis or HTTP.
#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include <fmt/format.h>

#include "internal/backend_registry.h"
#include "kiln/cache.h"
#include "kiln/remote_store.h"
#include "kiln/temp_directory.h"

namespace kiln {
namespace {

// --- The fake backend: a store, its parse and open, and its row ---

// Every store of one shelf (the URL's host part) shares its objects.
struct Shelves {
  std::mutex mutex;
  std::map<std::string, std::map<std::string, std::string>> objects;  // shelf -> kind/hex -> bytes
};

Shelves& shelves() {
  static Shelves all;
  return all;
}

class MemStore final : public RemoteStore {
 public:
  explicit MemStore(const RemoteStoreOptions& options)
      : shelf_(options.host), name_(redacted_url(options.url)) {}

  using RemoteStore::get;
  std::optional<std::string> get(std::string_view kind, std::string_view hex,
                                 std::uint64_t max_bytes) override {
    std::lock_guard lock(shelves().mutex);
    auto& objects = shelves().objects[shelf_];
    auto it = objects.find(object(kind, hex));
    if (it == objects.end()) return std::nullopt;
    if (it->second.size() > max_bytes) {
      throw RemoteStoreError(fmt::format("{}: {} is over {} bytes", name_, it->first, max_bytes));
    }
    return it->second;
  }
  void put(std::string_view kind, std::string_view hex, std::string_view bytes) override {
    std::lock_guard lock(shelves().mutex);
    shelves().objects[shelf_][object(kind, hex)] = std::string(bytes);
  }
  bool contains(std::string_view kind, std::string_view hex) override {
    std::lock_guard lock(shelves().mutex);
    return shelves().objects[shelf_].count(object(kind, hex)) != 0;
  }
  void remove(std::string_view kind, std::string_view hex) override {
    std::lock_guard lock(shelves().mutex);
    shelves().objects[shelf_].erase(object(kind, hex));
  }
  const std::string& name() const override { return name_; }

 private:
  static std::string object(std::string_view kind, std::string_view hex) {
    return fmt::format("{}/{}", kind, hex);
  }

  std::string shelf_;
  std::string name_;
};

void parse_mem(std::string_view url, const internal::UrlParts& parts, RemoteStoreOptions& out) {
  if (parts.authority.empty()) internal::bad_url(url, "no shelf (mem://shelf)");
  out.host = std::string(parts.authority);
}

std::unique_ptr<RemoteStore> open_mem(const RemoteStoreOptions& options) {
  return std::make_unique<MemStore>(options);
}

// The one row.
const internal::RemoteBackend kMemBackend{
    .scheme = "mem",
    .form = "mem://shelf",
    .description = "objects in a map of this process (a test's fake backend)",
    .parse = &parse_mem,
    .open = &open_mem,
};

// --- Tests ---

std::string parse_error(std::string_view url) {
  try {
    (void)RemoteStoreOptions::parse(url);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<std::string> listed_schemes() {
  std::vector<std::string> schemes;
  for (const RemoteBackendInfo& backend : remote_backends()) schemes.push_back(backend.scheme);
  return schemes;
}

TEST(RemoteBackendRegistry, ListsTheBuiltInBackendsWithAFormAndALineEach) {
  EXPECT_EQ(listed_schemes(), (std::vector<std::string>{"redis", "redis+unix", "http", "https"}));
  for (const RemoteBackendInfo& backend : remote_backends()) {
    EXPECT_NE(backend.form.find("://"), std::string::npos) << backend.scheme;
    EXPECT_FALSE(backend.description.empty()) << backend.scheme;
  }
}

TEST(RemoteBackendRegistry, AUrlWithoutAKnownSchemeIsToldTheRegistrysSchemesAndForms) {
  std::string ftp = parse_error("ftp://cache");
  EXPECT_NE(ftp.find("the scheme 'ftp' is not one kiln knows (it knows redis://, redis+unix://, "
                     "http://, https://)"),
            std::string::npos)
      << ftp;
  EXPECT_NE(ftp.find("(the forms: redis://[user:password@]host[:port][/db], "
                     "redis+unix:///path/to/socket[?db=N], "
                     "http(s)://[user:password@]host[:port][/prefix])"),
            std::string::npos)
      << ftp;
  std::string bare = parse_error("cache:6379");
  EXPECT_NE(bare.find("no scheme (redis://, redis+unix://, http://, https://)"), std::string::npos)
      << bare;
  // A scheme kiln knows only to refuse is not one it offers.
  std::string tls = parse_error("rediss://cache");
  EXPECT_NE(tls.find("Redis over TLS (rediss://) is not supported"), std::string::npos) << tls;
  EXPECT_EQ(tls.find("rediss://..."), std::string::npos) << tls;
}

TEST(RemoteBackendRegistry, AFakeBackendInOneFileAndOneRowServesACache) {
  EXPECT_NE(parse_error("mem://shelf").find("the scheme 'mem'"), std::string::npos);
  TempDirectory dir;
  // A shelf of its own (the process keeps one level per URL, counters and all).
  std::string url = "mem://" + dir.path().filename().string();
  {
    internal::RemoteBackendRegistration registered(kMemBackend);
    RemoteStoreOptions options = RemoteStoreOptions::parse(url);
    EXPECT_EQ(options.scheme, "mem");
    EXPECT_EQ(options.host, url.substr(6));
    EXPECT_EQ(listed_schemes().back(), "mem");
    EXPECT_NE(parse_error("ftp://cache").find("https://, mem://)"), std::string::npos);
    EXPECT_NE(parse_error("mem://").find("no shelf (mem://shelf)"), std::string::npos);
    EXPECT_THROW(internal::RemoteBackendRegistration again(kMemBackend), InvalidArgument);

    auto machine = [&](const char* name, bool read_write) {
      return Cache::open({.directory = dir / name / "cache",
                          .enabled = true,
                          .remote = RemoteCacheOptions{.url = url, .read_write = read_write},
                          .base_directory = dir / name / "checkout"});
    };
    Cache ci = machine("ci", true);
    Cache dev = machine("dev", false);
    std::string key = cache_key({"a kernel", "-O3"});
    ci.put(key, "compiled on ci");
    CacheOrigin origin = CacheOrigin::none;
    EXPECT_EQ(dev.get(key, &origin), "compiled on ci");
    EXPECT_EQ(origin, CacheOrigin::remote);
    EXPECT_EQ(dev.remote_description(), url + " (read-only)");
    EXPECT_EQ(dev.remote_counters().hits, 1u);
    EXPECT_EQ(ci.remote_counters().uploads, 1u);
    std::lock_guard lock(shelves().mutex);
    EXPECT_EQ(shelves().objects[url.substr(6)].size(), 2u);  // the action entry and the content
  }
  EXPECT_NE(parse_error(url).find("the scheme 'mem'"), std::string::npos) << "registered no more";
  EXPECT_EQ(listed_schemes().back(), "https");
}

}  // namespace
}  // namespace kiln
