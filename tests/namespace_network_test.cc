// NamespaceNetwork (src/testing/namespace_network.h), the harness under the distributed-build
// tests: hosts reach each other over TCP through the bridge, a program run through exec_prefix()
// sees its host's address, nothing of the network shows in the machine's root namespace, and the
// namespaces are gone after the destructor.
#include "testing/namespace_network.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "kiln/process.h"

namespace kiln {
namespace {

using namespace std::chrono_literals;
using testing::NamespaceNetwork;

// A descriptor that closes itself.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// A TCP socket made inside namespace `ns`: a thread enters it (a network namespace is a
// per-thread attribute) and the socket stays bound to it for its whole life.
int tcp_socket_in(const std::string& ns) {
  int fd = -1;
  std::thread([&] {
    int ns_fd = ::open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (ns_fd >= 0 && ::setns(ns_fd, CLONE_NEWNET) == 0) {
      fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    }
    if (ns_fd >= 0) ::close(ns_fd);
  }).join();
  return fd;
}

sockaddr_in ipv4(const std::string& address, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, address.c_str(), &addr.sin_addr);
  return addr;
}

// Listens on 0.0.0.0 (every address of its namespace); returns the port.
int listen_any(int fd) {
  sockaddr_in addr = ipv4("0.0.0.0", 0);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 4) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return -1;
  }
  return ntohs(addr.sin_port);
}

// Connects within 5 s: 0 on success, else the errno (ETIMEDOUT when nothing answered).
int connect_within(int fd, const std::string& address, int port) {
  sockaddr_in addr = ipv4(address, port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  pollfd p{.fd = fd, .events = POLLOUT, .revents = 0};
  if (::poll(&p, 1, 5000) != 1) return ETIMEDOUT;
  int error = 0;
  socklen_t len = sizeof error;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
  return error;
}

// Accepts one connection within 5 s and reads what it sends within 5 s.
std::string accept_and_read(int listener) {
  pollfd p{.fd = listener, .events = POLLIN, .revents = 0};
  if (::poll(&p, 1, 5000) != 1) return "<no connection>";
  Fd conn(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  pollfd r{.fd = conn.get(), .events = POLLIN, .revents = 0};
  if (::poll(&r, 1, 5000) != 1) return "<nothing read>";
  char buffer[64];
  ssize_t n = ::read(conn.get(), buffer, sizeof buffer);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : "<read failed>";
}

TEST(NamespaceNetwork, TwoHostsTalkOverTcpThroughTheBridge) {
  NamespaceNetwork net(2);
  if (!net.available()) GTEST_SKIP() << net.why();
  Fd listener(tcp_socket_in(net.name(0)));
  Fd client(tcp_socket_in(net.name(1)));
  ASSERT_GE(listener.get(), 0);
  ASSERT_GE(client.get(), 0);
  int port = listen_any(listener.get());
  ASSERT_GT(port, 0);

  ASSERT_EQ(connect_within(client.get(), net.address(0), port), 0) << net.address(0);
  ASSERT_EQ(::write(client.get(), "hello", 5), 5);
  EXPECT_EQ(accept_and_read(listener.get()), "hello");

  // Each host has a loopback of its own: host 1's 127.0.0.1 is not host 0's.
  Fd local(tcp_socket_in(net.name(1)));
  EXPECT_EQ(connect_within(local.get(), "127.0.0.1", port), ECONNREFUSED);
}

TEST(NamespaceNetwork, ExecPrefixRunsAProgramOnThatHost) {
  NamespaceNetwork net(3);
  if (!net.available()) GTEST_SKIP() << net.why();
  for (int host = 0; host < net.hosts(); ++host) {
    std::vector<std::string> argv = net.exec_prefix(host);
    argv.insert(argv.end(), {"ip", "-o", "-4", "addr", "show"});
    RunResult shown = run({.argv = argv, .timeout = 10s});
    ASSERT_TRUE(shown.ok()) << shown.output;
    EXPECT_NE(shown.output.find("eth0    inet " + net.address(host) + "/24"), std::string::npos)
        << shown.output;
    EXPECT_NE(shown.output.find("lo    inet 127.0.0.1/8"), std::string::npos) << shown.output;
    for (int other = 0; other < net.hosts(); ++other) {
      if (other == host) continue;
      EXPECT_EQ(shown.output.find(net.address(other) + "/"), std::string::npos) << shown.output;
    }
  }
}

TEST(NamespaceNetwork, NothingOfItIsInTheRootNamespace) {
  NamespaceNetwork net(2);
  if (!net.available()) GTEST_SKIP() << net.why();
  Fd listener(tcp_socket_in(net.name(0)));
  int port = listen_any(listener.get());
  ASSERT_GT(port, 0);

  // A service listening on every address of host 0 is not on the machine's loopback...
  Fd outside(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  EXPECT_EQ(connect_within(outside.get(), "127.0.0.1", port), ECONNREFUSED);
  // ...and the root namespace has no address, route or link on the hosts' subnet: no path in,
  // and none out.
  std::string subnet = net.address(0).substr(0, net.address(0).rfind('.') + 1);
  RunResult addresses = run({.argv = {"ip", "-o", "addr", "show"}, .timeout = 10s});
  RunResult routes = run({.argv = {"ip", "route", "show", "table", "all"}, .timeout = 10s});
  ASSERT_TRUE(addresses.ok() && routes.ok()) << addresses.output << routes.output;
  EXPECT_EQ(addresses.output.find(subnet), std::string::npos) << addresses.output;
  EXPECT_EQ(routes.output.find(subnet), std::string::npos) << routes.output;
  // The bridge and the hosts' veth ends are in the hub namespace.
  RunResult hub_links = run({.argv = {"ip", "-n", net.hub(), "-o", "link"}, .timeout = 10s});
  EXPECT_NE(hub_links.output.find("v1@"), std::string::npos) << hub_links.output;
  EXPECT_NE(hub_links.output.find("master br0"), std::string::npos) << hub_links.output;
}

TEST(NamespaceNetwork, TheDestructorDeletesEveryNamespace) {
  std::vector<std::string> names;
  {
    NamespaceNetwork net(2);
    if (!net.available()) GTEST_SKIP() << net.why();
    names = {net.hub(), net.name(0), net.name(1)};
    for (const std::string& name : names) {
      ASSERT_TRUE(std::filesystem::exists("/run/netns/" + name)) << name;
    }
  }
  for (const std::string& name : names) {
    EXPECT_FALSE(std::filesystem::exists("/run/netns/" + name)) << name;
  }
}

}  // namespace
}  // namespace kiln
