// Where this user's template services live (template_service.h), and which processes may use
// them: those of the same user, cgroup and namespaces ("scope"), so that a container, or another
// user, never reaches a service.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "internal/fd.h"

namespace kiln::internal {

// Process `pid`'s scope as text: its cgroups and the identities of its namespaces ("" when they
// cannot be read).
std::string scope_of(pid_t pid);

// This user's directory of template services for this process's scope:
// $XDG_RUNTIME_DIR/kiln/templates-<scope digest>, or /tmp/kiln-<uid>/templates-<scope digest>
// without one; made 0700 when missing. SystemError when it, or the directory it is in, is not
// this user's alone.
std::filesystem::path template_service_directory();
// The socket of the service for the template key with this digest.
std::filesystem::path template_service_socket(std::string_view digest);

// A connection to the service at `socket`, checked to be this user's; invalid with `why` set
// when there is none (a socket nothing listens on any more is removed).
UniqueFd connect_to_service(const std::filesystem::path& socket, std::string& why);

// While a service prepares (imports what its first caller asked for) it holds a lock on
// <digest>.preparing beside its socket; a process that only wants one made ahead
// (prepare_template's `unless_elsewhere`) leaves the work to it. The service's side: the lock,
// held until the descriptor closes (invalid when it cannot be taken: it prepares all the same).
UniqueFd hold_preparing_lock(const std::filesystem::path& socket);
// Whether another process holds the lock of the service at `socket`.
bool preparing_elsewhere(const std::filesystem::path& socket);

struct ServiceInfo {
  std::filesystem::path socket;
  std::string status;  // the service's "status" answer less its first line, or why none came
};
// The services in template_service_directory(); with `stop`, each is told to stop first.
std::vector<ServiceInfo> template_services(bool stop);

}  // namespace kiln::internal
