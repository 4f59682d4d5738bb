// distcc's compiles of one job (kiln/distcc_log.h) told as an EngineAccount.
#include "distcc_account.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kiln::build::detail {

EngineAccount distcc_account(std::string_view client_log) {
  kiln::DistccLog log = kiln::read_distcc_log(client_log);
  long remote = 0;
  long local = 0;
  EngineAccount account;
  for (const kiln::DistccCompile& compile : log.compiles) {
    // Only a finished compile says where an object came from; a failed one is the job's error.
    if (!compile.ok) continue;
    if (compile.host == "localhost") {
      ++local;
    } else {
      ++remote;
      if (std::find(account.hosts.begin(), account.hosts.end(), compile.host) ==
          account.hosts.end()) {
        account.hosts.push_back(compile.host);
      }
    }
  }
  std::string hosts = fmt::format("{}", fmt::join(account.hosts, ", "));
  std::string fallback =
      log.fell_back > 0 ? fmt::format(" ({} could not be distributed: fell back)", log.fell_back)
                        : "";
  if (remote > 0 && local == 0) {
    account.ran = "remote";
    account.detail = fmt::format("distcc: compiled on {}", hosts);
  } else if (remote > 0) {
    account.ran = "mixed";
    account.detail = fmt::format("distcc: {} on {}, {} locally{}", remote, hosts, local, fallback);
  } else {
    account.ran = "local";
    account.detail = local > 0 ? "distcc: compiled locally" + fallback
                               : "distcc: not a compile it distributes; ran locally";
  }
  return account;
}

}  // namespace kiln::build::detail
