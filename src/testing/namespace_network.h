// Several "hosts" on one machine for tests of distributed builds: one network namespace per host,
// each with an eth0 (a veth pair) plugged into a Linux bridge that lives in a hub namespace of its
// own, and lo up. The hosts share a private /24 (10.<derived from the pid>.0/24); nothing is
// added to the machine's root namespace, so no traffic between hosts can leave them and nothing in
// them is reachable from outside. Namespace names carry the test process's pid, so two test
// processes never collide; the destructor deletes the namespaces, which removes the veths and
// the bridge with them.
//
//   kiln::testing::NamespaceNetwork net(3);
//   if (!net.available()) GTEST_SKIP() << net.why();      // not root, no `ip`, netns refused
//   auto argv = net.exec_prefix(1);                          // {"ip", "netns", "exec", "kiln…h1"}
//   argv.insert(argv.end(), {"ping", "-c1", net.address(2)});
//   kiln::run({.argv = argv, .timeout = std::chrono::seconds(5)});
//
// Processes started inside a namespace keep it alive after its name is deleted: stop them
// (by pid) before the NamespaceNetwork goes.
#pragma once

#include <string>
#include <vector>

namespace kiln::testing {

class NamespaceNetwork {
 public:
  // Creates `hosts` namespaces joined by a bridge. Never throws for what the system refuses:
  // available() is then false and why() says why (everything made so far is removed).
  explicit NamespaceNetwork(int hosts);
  ~NamespaceNetwork();
  NamespaceNetwork(const NamespaceNetwork&) = delete;
  NamespaceNetwork& operator=(const NamespaceNetwork&) = delete;

  bool available() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  int hosts() const { return static_cast<int>(names_.size()); }
  // Host i's namespace name, as `ip netns` knows it.
  const std::string& name(int host) const { return names_.at(host); }
  // Host i's IPv4 address on the shared /24, e.g. "10.213.37.2".
  std::string address(int host) const;
  // The argv prefix that runs a program in host i's namespace: {"ip", "netns", "exec", name}.
  // `ip netns exec` execs the program in place, so the pid of a process started this way is the
  // program's own.
  std::vector<std::string> exec_prefix(int host) const;
  // The hub namespace that holds the bridge (for inspection in tests).
  const std::string& hub() const { return hub_; }

 private:
  bool create(int hosts);
  bool ip(const std::vector<std::string>& args);
  void remove_all();

  std::string prefix_;
  std::string subnet_;  // "10.a.b." (the host part is appended)
  std::string hub_;
  std::vector<std::string> names_;
  std::vector<std::string> created_;  // namespaces to delete, hub included
  std::string why_;
};

// Deletes namespaces a test process left behind when it was killed (named for a pid that no
// longer runs). Called by the constructor; bounded (one `ip netns del` per stale name).
void remove_stale_namespaces();

}  // namespace kiln::testing
