#include "testing/distcc_daemon.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "kiln/paths.h"
#include "testing/cache_servers.h"
#include "testing/test_support.h"

namespace kiln::testing {
namespace {

using namespace std::chrono_literals;

bool accepts_connections(int port) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(s);
  return ok;
}

}  // namespace

DistccDaemon::DistccDaemon() {
  if (!which("distcc") || !which("distccd")) {
    why_ = "distcc/distccd are not installed (scripts/install-deps.sh)";
    return;
  }
  // distccd run as root drops to `nobody`, which must be able to reach and write its log and
  // pid file: a directory of their own, world-writable and sticky like /tmp.
  ::chmod(shared_.path().c_str(), 01777);
  log_ = shared_ / "distccd.log";
  pid_file_ = shared_ / "distccd.pid";
  port_ = unused_loopback_port();
  if (port_ <= 0) {
    why_ = "no free loopback port";
    return;
  }
  daemon_ = std::async(std::launch::async, [this] {
    return run({.argv = {"distccd", "--no-detach", "--daemon", "--listen", "127.0.0.1", "--allow",
                         "127.0.0.1", "--port", std::to_string(port_), "--user", "nobody", "--jobs",
                         "2", "--log-file", log_.string(), "--pid-file", pid_file_.string(),
                         "--log-level", "info"},
                .timeout = 120s});
  });
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!accepts_connections(port_) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  if (!accepts_connections(port_)) why_ = "distccd did not start: " + log();
  std::filesystem::create_directory(state_ / "client");
}

DistccDaemon::~DistccDaemon() {
  if (!daemon_.valid()) return;
  pid_t pid = 0;
  std::ifstream(pid_file_) >> pid;
  if (pid > 0) ::kill(-pid, SIGTERM);
  daemon_.wait();
}

Launcher::Environment DistccDaemon::client_env() const {
  return {{"DISTCC_HOSTS", "127.0.0.1:" + std::to_string(port_)},
          {"DISTCC_FALLBACK", "0"},
          {"DISTCC_DIR", (state_ / "client").string()}};
}

std::string DistccDaemon::log() const { return read_file(log_); }

size_t DistccDaemon::wait_for_log(const std::string& text, size_t count) const {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  size_t seen = count_occurrences(log(), text);
  while (seen < count && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
    seen = count_occurrences(log(), text);
  }
  return seen;
}

}  // namespace kiln::testing
