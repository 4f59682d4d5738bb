// kiln doctor --dist for icecream (icecc): the program, a local iceccd on one of the sockets icecc
// tries, and a trivial compile whose ICECC_LOGFILE names the host the scheduler chose.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include <fmt/format.h>

#include "dist.h"
#include "internal/fd.h"
#include "internal/files.h"
#include "kiln/icecc_log.h"
#include "kiln/temp_directory.h"
#include "support.h"

namespace kiln::doctor::detail {
namespace {

bool unix_socket_answers(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) return false;
  internal::UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return s && ::connect(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
}

// iceccd's TCP port on this machine's loopback (a refusal is immediate there).
bool loopback_port_answers(int port) {
  internal::UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return s && ::connect(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
}

// Where icecc looks for its daemon, in its order: ICECC_TEST_SOCKET alone when set, else
// /var/run/icecc/iceccd.socket, /var/run/iceccd.socket, ~/.iceccd.socket, then TCP 10245.
Finding daemon_finding() {
  Finding f{"iceccd", Status::pass, "", ""};
  std::vector<std::string> sockets;
  if (std::optional<std::string> test = internal::env("ICECC_TEST_SOCKET")) {
    sockets = {*test};
  } else {
    sockets = {"/var/run/icecc/iceccd.socket", "/var/run/iceccd.socket"};
    if (std::optional<std::string> home = internal::env("HOME")) {
      sockets.push_back(*home + "/.iceccd.socket");
    }
  }
  for (const std::string& socket : sockets) {
    if (unix_socket_answers(socket)) {
      f.finding = "the local iceccd answers on " + socket;
      return f;
    }
  }
  if (!internal::env("ICECC_TEST_SOCKET") && loopback_port_answers(10245)) {
    f.finding = "the local iceccd answers on 127.0.0.1:10245";
    return f;
  }
  std::string tried;
  for (const std::string& socket : sockets) tried += socket + ", ";
  f.status = Status::fail;
  f.finding = fmt::format("no local iceccd answers (tried {}{}): icecc compiles locally", tried,
                          internal::env("ICECC_TEST_SOCKET") ? "no other: ICECC_TEST_SOCKET is set"
                                                             : "127.0.0.1:10245");
  f.fix =
      "start the daemon: systemctl start iceccd (Debian's icecc package), or iceccd -d -s "
      "<scheduler host>; the scheduler (icecc-scheduler) runs on one machine of the network";
  return f;
}

Finding compile_finding(const std::string& icecc, std::chrono::seconds timeout) {
  std::string cc = probe_compiler();
  if (cc.empty()) return no_probe_compiler("icecc remote compile");
  Finding f{"icecc remote compile", Status::fail, "", ""};
  TempDirectory dir = probe_directory();
  RunResult compile = run({.argv = {icecc, cc, "-c", "probe.c", "-o", "probe.o"},
                           .cwd = dir.path(),
                           .env = kiln::icecc_log_env(dir / "icecc.log"),
                           .timeout = timeout * 3});
  std::string log = internal::is_file(dir / "icecc.log") ? internal::read_file(dir / "icecc.log")
                                                         : compile.output;
  EngineVerdict verdict = icecc_verdict(log);
  if (compile.ok() && !verdict.host.empty()) {
    f.status = Status::pass;
    f.finding = fmt::format("a trivial C compile ran on {} (icecc's log: \"Have to use host\")",
                            verdict.host);
    return f;
  }
  f.status = compile.ok() ? Status::warn : Status::fail;
  f.finding = fmt::format("the trivial compile ({}) {}; icecc's log:\n{}", compile.command_line,
                          compile.ok() ? "ran on this machine" : compile.status_text(),
                          verdict.lines.empty() ? "(nothing)" : verdict.lines);
  f.fix =
      "the scheduler places a job on this machine when no other daemon is registered or free: "
      "check that icecc-scheduler runs and that iceccd on the other machines reaches it (TCP "
      "8765, UDP 8765 broadcast, TCP 10245 between daemons); docs/distributed.md, icecream";
  return f;
}

}  // namespace

std::vector<Finding> check_icecc_dist(std::chrono::seconds timeout) {
  ToolFinding icecc =
      tool_finding("icecc", "apt-get install icecc (it brings iceccd and icecc-scheduler)");
  std::vector<Finding> findings{icecc.finding};
  if (!icecc.path) return findings;
  findings.push_back(daemon_finding());
  if (findings.back().status == Status::fail) return findings;
  findings.push_back(compile_finding(icecc.path->string(), timeout));
  return findings;
}

}  // namespace kiln::doctor::detail
