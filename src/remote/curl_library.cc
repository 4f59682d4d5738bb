// The one libcurl of the process (internal/curl_library.h).
#include "internal/curl_library.h"

#include <dlfcn.h>

#include <string_view>
#include <type_traits>

#include <fmt/format.h>

namespace kiln::internal {
namespace {

constexpr const char* kCurlLibrary = "libcurl.so.4";

std::string needs_libcurl(std::string_view library, std::string_view why) {
  return fmt::format(
      "the HTTP remote cache needs libcurl ({}: {}; Debian: apt-get install libcurl4)", library,
      why);
}

// Fills `api` from `library` (never unloaded); returns "" or the message saying why it cannot.
std::string load_curl(const char* library, CurlApi& api) {
  void* handle = ::dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = ::dlerror();
    std::string_view why = error != nullptr ? error : "dlopen failed";
    std::string prefix = fmt::format("{}: ", library);
    if (why.starts_with(prefix)) why.remove_prefix(prefix.size());
    return needs_libcurl(library, why);
  }
  std::string missing;
  auto resolve = [&](auto& slot, const char* symbol) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(::dlsym(handle, symbol));
    if (slot == nullptr && missing.empty()) missing = symbol;
  };
  resolve(api.global_init, "curl_global_init");
  resolve(api.easy_init, "curl_easy_init");
  resolve(api.easy_setopt, "curl_easy_setopt");
  resolve(api.easy_perform, "curl_easy_perform");
  resolve(api.easy_getinfo, "curl_easy_getinfo");
  resolve(api.easy_cleanup, "curl_easy_cleanup");
  resolve(api.easy_strerror, "curl_easy_strerror");
  resolve(api.easy_reset, "curl_easy_reset");
  resolve(api.slist_append, "curl_slist_append");
  resolve(api.slist_free_all, "curl_slist_free_all");
  if (!missing.empty()) return needs_libcurl(library, fmt::format("it has no {}", missing));
  return {};
}

}  // namespace

const LoadedCurl& loaded_curl() {
  static const LoadedCurl loaded = [] {
    LoadedCurl curl;
    curl.error = load_curl(kCurlLibrary, curl.api);
    if (curl.error.empty()) {
      CURLcode code = curl.api.global_init(CURL_GLOBAL_DEFAULT);
      if (code != CURLE_OK) {
        curl.error = needs_libcurl(
            kCurlLibrary, fmt::format("curl_global_init failed: {}", curl.api.easy_strerror(code)));
      }
    }
    return curl;
  }();
  return loaded;
}

std::string curl_unavailable(const char* library) {
  CurlApi api;
  return load_curl(library, api);
}

}  // namespace kiln::internal
