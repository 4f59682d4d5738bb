// What the tests on clusters of distributed-build engines (testing::SccacheCluster,
// testing::IcecreamCluster, both testing::ClusterBase) share: skipping or failing on a cluster
// that is not up, and the harness test that nothing of a cluster outlives it.
//
//   testing::NamespaceNetwork net(3);
//   testing::SccacheCluster cluster(net, {.servers = 1});
//   KILN_REQUIRE_CLUSTER(cluster);   // skips without root/netns/tools, fails if it did not come up
//
// With KILN_REQUIRE_CLUSTERS=1 in the environment (.ci/run sets it) a missing prerequisite fails
// the test too: on CI's machine install-deps puts every tool there and root may make namespaces,
// so a skip there would be a broken setup passing as green.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "base/internal/files.h"
#include "testing/cluster_base.h"
#include "testing/test_support.h"

// Skips the running test when `cluster` could not be tried (no root, netns or the engine's
// tools) unless clusters_required(), and fails it when the cluster was tried and did not come up
// (why() has the logs).
#define KILN_REQUIRE_CLUSTER(cluster)                                                            \
  do {                                                                                           \
    if ((cluster).missing_prerequisite() && !::kiln::testing::clusters_required()) {             \
      GTEST_SKIP() << (cluster).why();                                                           \
    }                                                                                            \
    ASSERT_TRUE((cluster).available())                                                           \
        << (cluster).why()                                                                       \
        << ((cluster).missing_prerequisite() ? " (KILN_REQUIRE_CLUSTERS is set: no skip)" : ""); \
  } while (false)

namespace kiln::testing {

// Whether KILN_REQUIRE_CLUSTERS=1: a cluster test may not skip.
inline bool clusters_required() { return internal::env("KILN_REQUIRE_CLUSTERS") == "1"; }

// A cluster made by `make` runs `processes` processes; after its destructor none of them runs
// and its directory is gone. Call it as the whole body of a test (it may skip it).
inline void expect_nothing_left_after_destructor(
    const std::function<std::unique_ptr<ClusterBase>()>& make, size_t processes) {
  std::vector<pid_t> pids;
  std::filesystem::path directory;
  {
    std::unique_ptr<ClusterBase> cluster = make();
    KILN_REQUIRE_CLUSTER(*cluster);
    pids = cluster->pids();
    directory = cluster->directory();
    ASSERT_EQ(pids.size(), processes);
    for (pid_t pid : pids) ASSERT_FALSE(process_gone(pid)) << pid;
  }
  for (pid_t pid : pids) EXPECT_TRUE(process_gone(pid)) << pid;
  EXPECT_FALSE(std::filesystem::exists(directory)) << directory;
}

}  // namespace kiln::testing
