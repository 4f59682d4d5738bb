// The registry of remote backends (internal/backend_registry.h): the built-in table, one row per
// backend, and the rows added at run time.
#include <algorithm>
#include <array>
#include <mutex>

#include <fmt/format.h>

#include "internal/backend_registry.h"

namespace kiln::internal {

// Each row is defined in its backend's file.
extern const RemoteBackend kRedisBackend;      // redis_store.cc
extern const RemoteBackend kRedisUnixBackend;  // redis_store.cc
extern const RemoteBackend kRedisTlsRefused;   // redis_store.cc
extern const RemoteBackend kHttpBackend;       // http_store.cc
extern const RemoteBackend kHttpsBackend;      // http_store.cc

namespace {

// The built-in backends, in the order messages and remote_backends() list them.
//
// REAPI v2 (DESIGN.md: remote caching and execution across machines over gRPC) lands here as a
// row of its own, grpc:// and grpcs://, from a file of its own (reapi_store.cc: its parse and a
// store of the ActionCache and CAS services, the gRPC library loaded at run time as libcurl is,
// curl_library.h). There is no row until that store works: until then such a URL is a scheme
// kiln does not know.
constexpr std::array kBuiltIn = {
    &kRedisBackend, &kRedisUnixBackend, &kRedisTlsRefused, &kHttpBackend, &kHttpsBackend,
};

struct Registry {
  std::mutex mutex;
  std::vector<const RemoteBackend*> rows{kBuiltIn.begin(), kBuiltIn.end()};
};

Registry& registry() {
  static Registry* registry = new Registry();  // never freed: a store may be opened at exit
  return *registry;
}

}  // namespace

const RemoteBackend* find_remote_backend(std::string_view scheme) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = std::find_if(r.rows.begin(), r.rows.end(),
                         [&](const RemoteBackend* row) { return row->scheme == scheme; });
  return it == r.rows.end() ? nullptr : *it;
}

std::vector<const RemoteBackend*> usable_remote_backends() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<const RemoteBackend*> usable;
  std::copy_if(r.rows.begin(), r.rows.end(), std::back_inserter(usable),
               [](const RemoteBackend* row) { return row->refusal.empty(); });
  return usable;
}

std::string remote_schemes_text() {
  std::string text;
  for (const RemoteBackend* row : usable_remote_backends()) {
    text += fmt::format("{}{}://", text.empty() ? "" : ", ", row->scheme);
  }
  return text;
}

std::string remote_forms_text() {
  std::vector<std::string_view> forms;
  std::string text;
  for (const RemoteBackend* row : usable_remote_backends()) {
    if (std::find(forms.begin(), forms.end(), row->form) != forms.end()) continue;
    forms.push_back(row->form);
    text += fmt::format("{}{}", text.empty() ? "" : ", ", row->form);
  }
  return text;
}

RemoteBackendRegistration::RemoteBackendRegistration(const RemoteBackend& backend)
    : backend_(&backend) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const RemoteBackend* row : r.rows) {
    if (row->scheme == backend.scheme) {
      throw InvalidArgument(
          fmt::format("remote backend {}://: the registry has that scheme already", row->scheme));
    }
  }
  r.rows.push_back(backend_);
}

RemoteBackendRegistration::~RemoteBackendRegistration() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.rows.erase(std::remove(r.rows.begin(), r.rows.end(), backend_), r.rows.end());
}

}  // namespace kiln::internal
