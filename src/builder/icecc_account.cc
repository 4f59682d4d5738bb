// icecc's runs of one job (kiln/icecc_log.h) told as an EngineAccount.
#include "icecc_account.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace kiln::build::detail {
namespace {

using kiln::IceccRun;

std::string local_detail(const IceccRun& run) {
  if (!run.failure.empty()) {
    std::string where = run.host.empty() ? "a remote compile" : "the remote compile on " + run.host;
    return "compiled here after " + where + " failed: " + run.failure;
  }
  if (!run.local_reason.empty()) return "compiled here (" + run.local_reason + ")";
  return "compiled here";
}

std::string describe(const IceccRun& run) {
  if (run.compiled_here) return local_detail(run);
  if (!run.host.empty()) return "compiled on " + run.host;
  return "no compile logged (it stopped before compiling)";
}

// The distinct descriptions in order of first appearance, each with its count when above one.
std::string join_details(const std::vector<std::string>& details) {
  std::vector<std::pair<std::string, int>> counted;
  for (const std::string& d : details) {
    auto it = std::find_if(counted.begin(), counted.end(), [&](auto& c) { return c.first == d; });
    if (it == counted.end()) {
      counted.emplace_back(d, 1);
    } else {
      ++it->second;
    }
  }
  std::string text;
  for (const auto& [d, n] : counted) {
    if (!text.empty()) text += "; ";
    text += n > 1 ? d + " (" + std::to_string(n) + " compiles)" : d;
  }
  return text;
}

}  // namespace

EngineAccount icecc_account(std::string_view client_log) {
  std::vector<IceccRun> runs = kiln::read_icecc_log(client_log).runs;
  EngineAccount account;
  if (runs.empty()) {
    account.detail = "icecc: it logged no compile";
    return account;
  }
  size_t remote = 0;
  size_t local = 0;
  std::vector<std::string> details;
  for (const IceccRun& run : runs) {
    details.push_back(describe(run));
    if (run.compiled_here) {
      ++local;
    } else if (run.remote()) {
      ++remote;
      if (std::find(account.hosts.begin(), account.hosts.end(), run.host) == account.hosts.end()) {
        account.hosts.push_back(run.host);
      }
    }
  }
  if (remote > 0 && local > 0) {
    account.ran = "mixed";
  } else if (remote > 0) {
    account.ran = "remote";
  } else if (local > 0) {
    account.ran = "local";
  }
  account.detail = "icecc: " + join_details(details);
  return account;
}

}  // namespace kiln::build::detail
