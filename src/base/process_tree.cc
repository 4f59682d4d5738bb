// The descendants of a process, read from /proc, and killing them (tvm's kill_child_processes).
#include <signal.h>
#include <sys/types.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "kiln/error.h"
#include "kiln/process.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

struct ProcessEntry {
  pid_t parent = 0;
  bool zombie = false;  // exited, waiting to be reaped: nothing left to kill
};

// Every process /proc lists now, by pid. A process that ends while being read is left out.
std::map<pid_t, ProcessEntry> process_table() {
  std::map<pid_t, ProcessEntry> table;
  std::error_code ec;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(it->path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last
    // ')'.
    size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(line.substr(close + 1));
    char state = 0;
    long parent = 0;
    if (!(fields >> state >> parent)) continue;
    table[static_cast<pid_t>(std::stol(name))] = {static_cast<pid_t>(parent), state == 'Z'};
  }
  return table;
}

// The live (not zombie) descendants of `pid` in `table`, parents before their children.
std::vector<pid_t> live_descendants(const std::map<pid_t, ProcessEntry>& table, pid_t pid) {
  std::multimap<pid_t, pid_t> children;
  for (const auto& [child, entry] : table) children.emplace(entry.parent, child);
  std::vector<pid_t> found;
  std::vector<pid_t> frontier{pid};
  while (!frontier.empty()) {
    pid_t parent = frontier.back();
    frontier.pop_back();
    auto [begin, end] = children.equal_range(parent);
    for (auto it = begin; it != end; ++it) {
      if (!table.at(it->second).zombie) found.push_back(it->second);
      frontier.push_back(it->second);
    }
  }
  return found;
}

void require_a_process_id(pid_t pid, std::string_view what) {
  if (pid <= 0) {
    throw InvalidArgument(
        fmt::format("{}: {} is not a process id (it must be positive)", what, pid));
  }
}

}  // namespace

std::vector<pid_t> descendant_processes(pid_t pid) {
  require_a_process_id(pid, "descendant_processes");
  return live_descendants(process_table(), pid);
}

size_t kill_child_processes(pid_t pid) {
  require_a_process_id(pid, "kill_child_processes");
  // A child may fork while its siblings are being killed: look again until a look finds no live
  // descendant that was not already killed (a killed one may still show until the kernel is
  // done with it). A few rounds bound a tree that keeps forking.
  std::set<pid_t> tried;
  size_t signalled = 0;
  for (int round = 0; round < 8; ++round) {
    bool any = false;
    for (pid_t descendant : live_descendants(process_table(), pid)) {
      if (!tried.insert(descendant).second) continue;
      any = true;
      if (::kill(descendant, SIGKILL) == 0) ++signalled;  // else gone already, or not ours
    }
    if (!any) break;
  }
  return signalled;
}

}  // namespace kiln
