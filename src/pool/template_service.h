// Worker templates that outlive the process that started them (pool.h, prepare_template): a
// template service, in the spirit of Android's zygote and Python's forkserver, serves forked
// workers to every later process of the same user, cgroup and namespaces whose template key
// (program, directory, environment) is the same, for as long as the files it imported are
// unchanged.
//
// Where it lives: one SOCK_SEQPACKET socket per key, <directory>/<key digest>.sock, in a
// directory of this user's (template_service_directory()) named for the scope: the user, the
// cgroup and the namespaces. It answers only peers of that same user and scope, and ends once no
// process has used it for KILN_POOL_TEMPLATE_IDLE; `kiln templates --stop` ends them sooner.
//
// The messages, beyond those of a process's own template (template.cc):
//   caller:   "hello\n<key digest>"
//   service:  "welcome\n<name prepared>...\n\n<name that failed>..."  or
//             "stale\n<why>" (an imported file changed: the service expires) or
//             "refused\n<why>"
//   caller:   "fork..." as to any template; the answer "pid\n<pid>" carries the worker's status
//             socket (kiln::internal::Child::foreign)
//   anyone:   "stop" (no answer): the service takes no more callers and ends with its workers
//   anyone:   "status"; the service: "status\npid <pid>\ncallers <n>\nworkers <n>\n..."
// A worker is the service's child: it exits with its caller (the service watches the caller's
// pidfd and the worker's status socket) and with the service (PR_SET_PDEATHSIG).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kiln/pool.h"

namespace kiln::internal {

// The prefix of a template's last argument that makes it a service: "service:<digest>:<socket>".
inline constexpr std::string_view kServiceArgument = "service:";

// The service's side: detaches, prepares, then serves until it is of no more use.
std::variant<int, pool::ForkedWorker> serve_template_service(const std::vector<std::string>& args,
                                                             const pool::TemplateHooks& hooks);

}  // namespace kiln::internal
