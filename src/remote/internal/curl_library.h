// libcurl, loaded at run time for every backend that speaks through it (http_store.cc today):
// kiln links no libcurl (a wheel may need nothing but glibc), so only a machine that uses such a
// cache needs it installed. <curl/curl.h> gives the types and constants; every call goes through
// CurlApi. One dlopen per process, whichever backend asks first.
#pragma once

#include <curl/curl.h>

#include <string>

namespace kiln::internal {

// The libcurl functions kiln calls.
struct CurlApi {
  decltype(&curl_global_init) global_init = nullptr;
  decltype(&curl_easy_init) easy_init = nullptr;
  decltype(&curl_easy_setopt) easy_setopt = nullptr;
  decltype(&curl_easy_perform) easy_perform = nullptr;
  decltype(&curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&curl_easy_strerror) easy_strerror = nullptr;
  decltype(&curl_easy_reset) easy_reset = nullptr;
  decltype(&curl_slist_append) slist_append = nullptr;
  decltype(&curl_slist_free_all) slist_free_all = nullptr;
};

struct LoadedCurl {
  CurlApi api;
  std::string error;  // "" when loaded; else why not, as a RemoteStoreError's message
};

// libcurl.so.4, loaded (never unloaded) and initialised by the first caller, once, whichever
// thread that is. Safe from many threads.
const LoadedCurl& loaded_curl();

// Why `library` cannot serve as kiln's libcurl (it does not load, or lacks a function kiln
// calls): the message a backend would throw; "" when it can. The tests' seam for a machine
// without libcurl.
std::string curl_unavailable(const char* library);

}  // namespace kiln::internal
