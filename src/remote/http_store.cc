// The HTTP(S) backend of kiln/remote_store.h (rows "http" and "https" of the registry): GET,
// PUT and HEAD of <prefix>/<kind>/<hex>, the layout ccache, sccache and Bazel remote caches use,
// through libcurl, loaded at run time (internal/curl_library.h).
#include <algorithm>
#include <cstring>
#include <initializer_list>

#include <fmt/format.h>

#include "internal/backend_registry.h"
#include "internal/curl_library.h"
#include "internal/store_support.h"
#include "kiln/enum_names.h"

namespace kiln::internal {
namespace {

using Clock = std::chrono::steady_clock;

enum class Method { get, put, head, del };

constexpr EnumName<Method> kVerbs[] = {
    {Method::get, "GET"}, {Method::put, "PUT"}, {Method::head, "HEAD"}, {Method::del, "DELETE"}};
static_assert(in_enum_order(kVerbs, Method::del), "a verb for every Method");

// What one request sends and receives; the callbacks' user data.
struct Transfer {
  std::string_view upload{};
  size_t sent = 0;
  // GET: the body of a 200 answer is kept, up to `limit` bytes; any other body is dropped.
  bool keep_body = false;
  std::uint64_t limit = 0;
  std::string_view kind{};
  std::string body{};
  const CurlApi* api = nullptr;
  CURL* handle = nullptr;
  bool length_checked = false;
  bool too_large = false;
  std::uint64_t announced = 0;  // the Content-Length of a body over the limit, 0 if none
};

long response_status(const Transfer& transfer) {
  long status = 0;
  transfer.api->easy_getinfo(transfer.handle, CURLINFO_RESPONSE_CODE, &status);
  return status;
}

// Keeps a GET's body: refused (the transfer ends with CURLE_WRITE_ERROR) when its
// Content-Length exceeds the limit, before any of it is kept, or else once more than that came.
size_t write_body(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  size_t bytes = size * count;
  if (!transfer->keep_body || response_status(*transfer) != 200) return bytes;
  if (!transfer->length_checked) {
    transfer->length_checked = true;
    curl_off_t length = -1;
    transfer->api->easy_getinfo(transfer->handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    if (length > 0 && static_cast<std::uint64_t>(length) > transfer->limit) {
      transfer->too_large = true;
      transfer->announced = static_cast<std::uint64_t>(length);
      return 0;
    }
  }
  if (transfer->body.size() + bytes > transfer->limit) {
    transfer->too_large = true;
    return 0;
  }
  transfer->body.append(data, bytes);
  return bytes;
}

size_t read_upload(char* buffer, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  size_t bytes = std::min(size * count, transfer->upload.size() - transfer->sent);
  std::memcpy(buffer, transfer->upload.data() + transfer->sent, bytes);
  transfer->sent += bytes;
  return bytes;
}

// libcurl rewinds an upload to send it again (on a kept-alive connection the server had closed).
int rewind_upload(void* user, curl_off_t offset, int origin) {
  auto* transfer = static_cast<Transfer*>(user);
  if (origin != SEEK_SET || offset < 0 || static_cast<size_t>(offset) > transfer->upload.size()) {
    return CURL_SEEKFUNC_CANTSEEK;
  }
  transfer->sent = static_cast<size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

std::string status_text(long status) {
  switch (status) {
    case 401:
      return "HTTP 401 Unauthorized (no credentials, or not the right ones)";
    case 403:
      return "HTTP 403 Forbidden";
    case 413:
      return "HTTP 413 Content Too Large (the server's limit on a body)";
    case 500:
      return "HTTP 500 Internal Server Error";
    case 502:
      return "HTTP 502 Bad Gateway";
    case 503:
      return "HTTP 503 Service Unavailable";
    default:
      return fmt::format("HTTP {}", status);
  }
}

// A time limit as libcurl takes it, at least 1 ms (0 would be none).
long milliseconds(std::chrono::milliseconds limit) {
  return static_cast<long>(std::max<std::chrono::milliseconds::rep>(limit.count(), 1));
}

// The time from now to `deadline`, as libcurl takes it.
long milliseconds_until(Clock::time_point deadline) {
  return milliseconds(std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()));
}

struct FreeList {
  const CurlApi* api;
  void operator()(curl_slist* list) const { api->slist_free_all(list); }
};
using List = std::unique_ptr<curl_slist, FreeList>;

class HttpStore final : public RemoteStore {
 public:
  HttpStore(const CurlApi& api, const RemoteStoreOptions& options)
      : api_(api),
        options_(options),
        name_(redacted_url(options.url)),
        resolver_(options.host, options.port) {
    bool ipv6 = options.host.find(':') != std::string::npos;
    base_ = fmt::format("{}://{}{}{}:{}{}", options.scheme, ipv6 ? "[" : "", options.host,
                        ipv6 ? "]" : "", options.port, options.path_prefix);
    append_header("Expect:");  // no 100-continue round trip before a PUT's body
    append_header("Content-Type: application/octet-stream");
    if (options.token) append_header("Authorization: Bearer " + *options.token);
  }
  ~HttpStore() override {
    if (headers_ != nullptr) api_.slist_free_all(headers_);
  }
  HttpStore(const HttpStore&) = delete;
  HttpStore& operator=(const HttpStore&) = delete;

  using RemoteStore::get;
  std::optional<std::string> get(std::string_view kind, std::string_view hex,
                                 std::uint64_t max_bytes) override {
    Transfer transfer{.keep_body = true, .limit = max_bytes, .kind = kind};
    long status = request(Method::get, kind, hex, transfer, {200, 404});
    if (status == 404) return std::nullopt;
    return std::move(transfer.body);
  }

  void put(std::string_view kind, std::string_view hex, std::string_view bytes) override {
    Transfer transfer{.upload = bytes};
    request(Method::put, kind, hex, transfer, {200, 201, 204});
  }

  bool contains(std::string_view kind, std::string_view hex) override {
    Transfer transfer;
    return request(Method::head, kind, hex, transfer, {200, 404}) == 200;
  }

  void remove(std::string_view kind, std::string_view hex) override {
    Transfer transfer;
    request(Method::del, kind, hex, transfer, {200, 202, 204, 404, 403, 405});
  }

  const std::string& name() const override { return name_; }

 private:
  using Handle = IdlePool<CURL>::Owned;

  void append_header(const std::string& line) {
    curl_slist* longer = api_.slist_append(headers_, line.c_str());
    if (longer == nullptr) throw RemoteStoreError(fmt::format("{}: out of memory", name_));
    headers_ = longer;
  }

  RemoteStoreError error(Method method, std::string_view kind, std::string_view hex,
                         std::string_view what) const {
    return RemoteStoreError(
        fmt::format("{}: {} {}/{}: {}", name_, enum_name(kVerbs, method), kind, hex, what));
  }

  template <typename Value>
  void set(CURL* handle, CURLoption option, Value value) const {
    CURLcode code = api_.easy_setopt(handle, option, value);
    if (code != CURLE_OK) {
      throw RemoteStoreError(fmt::format("{}: setting libcurl option {}: {}", name_,
                                         static_cast<int>(option), api_.easy_strerror(code)));
    }
  }

  // http and https only; a libcurl older than 7.85 knows only the bit mask (deprecated since).
  void limit_protocols(CURL* handle) const {
    if (api_.easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK) return;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    set(handle, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#pragma GCC diagnostic pop
  }

  void configure_method(CURL* handle, Method method, Transfer& transfer) const {
    switch (method) {
      case Method::get:
        set(handle, CURLOPT_HTTPGET, 1L);
        break;
      case Method::head:
        set(handle, CURLOPT_NOBODY, 1L);
        break;
      case Method::put:
        set(handle, CURLOPT_UPLOAD, 1L);
        set(handle, CURLOPT_READFUNCTION, &read_upload);
        set(handle, CURLOPT_READDATA, &transfer);
        set(handle, CURLOPT_SEEKFUNCTION, &rewind_upload);
        set(handle, CURLOPT_SEEKDATA, &transfer);
        set(handle, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(transfer.upload.size()));
        break;
      case Method::del:
        set(handle, CURLOPT_CUSTOMREQUEST, "DELETE");
        break;
    }
  }

  // The host's addresses for libcurl ("host:port:addr,addr"), so that it never looks the name
  // up itself (its resolver thread would be joined, however long it takes, by the handle's
  // cleanup); null for a numeric host. Throws RemoteStoreError when the lookup failed.
  List resolved(Method method, std::string_view kind, std::string_view hex,
                Clock::time_point deadline) {
    if (resolver_.numeric()) return List(nullptr, FreeList{&api_});
    HostResolver::Result found = resolver_.resolve(options_.connect_timeout, deadline);
    if (!found.error.empty()) throw error(method, kind, hex, found.error);
    std::string entry = fmt::format("{}:{}:", options_.host, options_.port);
    for (size_t i = 0; i < found.addresses.size(); ++i) {
      entry += (i == 0 ? "" : ",") + found.addresses[i].text;
    }
    List list(api_.slist_append(nullptr, entry.c_str()), FreeList{&api_});
    if (!list) throw error(method, kind, hex, "out of memory");
    return list;
  }

  // The whole transfer (connecting, the request, all of the answer) ends by `deadline`.
  void configure(CURL* handle, const std::string& url, Method method, Transfer& transfer,
                 char* errors, curl_slist* addresses, Clock::time_point deadline) const {
    set(handle, CURLOPT_URL, url.c_str());
    set(handle, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM for DNS time limits: threads
    if (addresses != nullptr) set(handle, CURLOPT_RESOLVE, addresses);
    set(handle, CURLOPT_CONNECTTIMEOUT_MS,
        std::min(milliseconds(options_.connect_timeout), milliseconds_until(deadline)));
    set(handle, CURLOPT_TIMEOUT_MS, milliseconds_until(deadline));
    set(handle, CURLOPT_FOLLOWLOCATION, 0L);
    limit_protocols(handle);
    (void)api_.easy_setopt(handle, CURLOPT_HTTP09_ALLOWED, 0L);  // libcurl < 7.64: not known
    set(handle, CURLOPT_ERRORBUFFER, errors);
    set(handle, CURLOPT_HTTPHEADER, headers_);
    set(handle, CURLOPT_WRITEFUNCTION, &write_body);
    set(handle, CURLOPT_WRITEDATA, &transfer);
    if (options_.ca_file) set(handle, CURLOPT_CAINFO, options_.ca_file->c_str());
    if (options_.user || options_.password) {
      set(handle, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
      set(handle, CURLOPT_USERNAME, options_.user.value_or("").c_str());
      set(handle, CURLOPT_PASSWORD, options_.password.value_or("").c_str());
    }
    configure_method(handle, method, transfer);
  }

  // Sends one request on an idle handle (its connection kept alive), else a new one, and returns
  // the status, one of `accepted`; anything else throws RemoteStoreError. A handle goes back to
  // the pool only after an accepted answer.
  long request(Method method, std::string_view kind, std::string_view hex, Transfer& transfer,
               std::initializer_list<long> accepted) {
    check_object_name(name_, kind, hex);
    Clock::time_point deadline = Clock::now() + options_.operation_timeout;
    std::string url = fmt::format("{}/{}/{}", base_, kind, hex);
    // Both before the handle, which may use them until its end.
    char errors[CURL_ERROR_SIZE] = "";
    List addresses = resolved(method, kind, hex, deadline);
    Handle handle = pool_.take();
    if (!handle) handle = Handle(api_.easy_init(), api_.easy_cleanup);
    if (!handle) throw error(method, kind, hex, "curl_easy_init failed");
    transfer.api = &api_;
    transfer.handle = handle.get();
    configure(handle.get(), url, method, transfer, errors, addresses.get(), deadline);
    CURLcode code = CURLE_OK;
    {
      SigpipeBlocked sigpipe;
      code = api_.easy_perform(handle.get());
    }
    if (code != CURLE_OK) {
      if (transfer.too_large) {
        throw error(method, kind, hex, over_limit(transfer.announced, transfer.limit, kind));
      }
      throw error(method, kind, hex, errors[0] != '\0' ? errors : api_.easy_strerror(code));
    }
    long status = 0;
    api_.easy_getinfo(handle.get(), CURLINFO_RESPONSE_CODE, &status);
    if (std::find(accepted.begin(), accepted.end(), status) == accepted.end()) {
      throw error(method, kind, hex, status_text(status));
    }
    // Idle handles keep their connections but no options: none points into this call's frame.
    api_.easy_reset(handle.get());
    pool_.give_back(std::move(handle));
    return status;
  }

  const CurlApi& api_;
  RemoteStoreOptions options_;
  std::string name_;
  std::string base_;  // scheme://host:port/prefix, without credentials
  curl_slist* headers_ = nullptr;
  HostResolver resolver_;
  IdlePool<CURL> pool_;
};

void parse_http(std::string_view url, const UrlParts& parts, RemoteStoreOptions& out) {
  parse_authority(url, parts.authority, out.scheme == "https" ? 443 : 80, out);
  if (parts.query) bad_url(url, "a query ('?...') is not understood in an HTTP cache's URL");
  std::string_view prefix = parts.path;
  while (prefix.ends_with('/')) prefix.remove_suffix(1);
  out.path_prefix = std::string(prefix);
}

std::unique_ptr<RemoteStore> open_http_store(const RemoteStoreOptions& options) {
  const LoadedCurl& curl = loaded_curl();
  if (!curl.error.empty()) throw RemoteStoreError(curl.error);
  return std::make_unique<HttpStore>(curl.api, options);
}

}  // namespace

// The registry's rows (backends.cc).
extern const RemoteBackend kHttpBackend{
    .scheme = "http",
    .form = "http(s)://[user:password@]host[:port][/prefix]",
    .description =
        "an HTTP server that stores PUTs (nginx WebDAV, bazel-remote; ccache's and "
        "Bazel's layout)",
    .lone_secret = LoneSecret::user_or_token,
    .parse = &parse_http,
    .open = &open_http_store,
};
extern const RemoteBackend kHttpsBackend{
    .scheme = "https",
    .form = "http(s)://[user:password@]host[:port][/prefix]",
    .description = "the same over TLS",
    .lone_secret = LoneSecret::user_or_token,
    .parse = &parse_http,
    .open = &open_http_store,
};

}  // namespace kiln::internal
