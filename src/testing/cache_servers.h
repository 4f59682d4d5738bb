// Cache servers for the tests and benchmarks of kiln's remote cache (kiln/remote_store.h): a real
// redis-server and a real nginx serving WebDAV, each in a temporary directory of its own and on a
// free loopback port (Redis: or a unix socket), and FaultyServer, a loopback listener that
// misbehaves on purpose. Each ends its server, and everything the server started, when destroyed.
// redis_command speaks to a Redis server directly, to see (or empty) what it holds.
//
//   if (auto why = kiln::testing::RedisServer::missing()) GTEST_SKIP() << *why;
//   kiln::testing::RedisServer redis({.password = "s3cret"});
//   ASSERT_TRUE(redis.running()) << redis.why();
//   auto store = kiln::open_remote_store(kiln::RemoteStoreOptions::parse(redis.url()));
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kiln/temp_directory.h"
#include "testing/background_process.h"

namespace kiln::testing {

// A loopback TCP port nothing listens on now (bound to port 0, then closed): connecting to it is
// refused, and a server may take it (racing with other programs doing the same).
int unused_loopback_port();

// A Redis reply (RESP2): an integer, simple or bulk strings (an array's elements, in order; a nil
// adds none), or an error. Arrays of arrays are not understood.
struct RespReply {
  long long integer = 0;
  std::vector<std::string> strings;
  std::string error;
};

// Sends one command ({"DBSIZE"}, {"KEYS", "*"}, {"FLUSHALL"}) to the Redis server on the loopback
// `port`, without AUTH, and returns its reply; waits up to 5 s for it. A reply with `error` set
// ("-ERR ..." without the "-") when the server refuses, "cannot connect" when it cannot be
// reached, "no whole reply" when it does not answer in time. Throws std::runtime_error when what
// comes back is not RESP.
//
//   kiln::testing::RespReply keys = kiln::testing::redis_command(redis.port(), {"KEYS", "*"});
RespReply redis_command(int port, const std::vector<std::string>& words);

class RedisServer {
 public:
  struct Options {
    // When set, the default user's password (requirepass).
    std::string password{};
    // When set, an ACL user with every right and this password, besides the default user.
    std::string acl_user{};
    std::string acl_password{};
    // Listen on a unix socket in the server's directory instead of a loopback port.
    bool unix_socket = false;
  };

  // Why redis-server cannot run here (it is not installed), std::nullopt when it can.
  static std::optional<std::string> missing();

  // Starts redis-server (no persistence) and waits up to 10 s until it answers PING; when its
  // port was taken meanwhile, starts it again on another. When it does not come up, running() is
  // false and why() says why, with its log.
  explicit RedisServer(const Options& options);
  RedisServer() : RedisServer(Options{}) {}
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  bool running() { return process_ && process_->running(); }
  const std::string& why() const { return why_; }
  // The URL with the options' credentials: the ACL user's when there is one, else the password:
  // redis://[user:password@]127.0.0.1:PORT, or redis+unix://[...@]/path/redis.sock.
  std::string url() const;
  // The URL with `userinfo` ("user:password", ":password"; "" for none) instead.
  std::string url_with(std::string_view userinfo) const;
  int port() const { return port_; }  // 0 on a unix socket
  const std::filesystem::path& socket() const { return socket_; }
  pid_t pid() const { return process_ ? process_->pid() : -1; }
  // Sends one inline command ("CLIENT KILL TYPE normal", "DBSIZE"), after AUTH with the
  // options' credentials, and returns the reply's first line ("+OK", ":3", "-ERR ..."); "" when
  // the server does not answer within 1 s.
  std::string ask(std::string_view command) const;
  // SIGTERM (SIGKILL after a bound) / SIGKILL now, as a server that crashes.
  void stop();
  void kill();
  std::string log() const;

 private:
  bool start(const Options& options, std::string& failure);

  TempDirectory directory_;
  Options options_;
  int port_ = 0;
  std::filesystem::path socket_;
  std::unique_ptr<BackgroundProcess> process_;
  std::string why_;
};

class WebdavServer {
 public:
  struct Options {
    // When set, every request needs HTTP basic auth as this user with this password.
    std::string user{};
    std::string password{};
  };

  // Why nginx cannot run here (it is not installed), std::nullopt when it can.
  static std::optional<std::string> missing();

  // Starts nginx (as WebDAV: GET, HEAD, PUT, DELETE; parent directories made on PUT) and waits up
  // to 10 s until it accepts connections; retries on another port as RedisServer does. Root runs
  // its workers as root, so that they can write the server's private directory.
  explicit WebdavServer(const Options& options);
  WebdavServer() : WebdavServer(Options{}) {}
  WebdavServer(const WebdavServer&) = delete;
  WebdavServer& operator=(const WebdavServer&) = delete;

  bool running() { return process_ && process_->running(); }
  const std::string& why() const { return why_; }
  // http://[user:password@]127.0.0.1:PORT, with the options' credentials.
  std::string url() const;
  std::string url_with(std::string_view userinfo) const;
  int port() const { return port_; }
  // Where the objects land: a PUT of <url>/<kind>/<hex> writes objects()/<kind>/<hex>.
  const std::filesystem::path& objects() const { return objects_; }
  std::filesystem::path object_path(std::string_view kind, std::string_view hex) const;
  pid_t pid() const { return process_ ? process_->pid() : -1; }
  void stop();
  void kill();
  // nginx's error log and what it wrote to stdout and stderr.
  std::string log() const;

 private:
  bool start(std::string& failure);
  void write_config() const;

  TempDirectory directory_;
  Options options_;
  int port_ = 0;
  std::filesystem::path objects_;
  std::unique_ptr<BackgroundProcess> process_;
  std::string why_;
};

// A loopback TCP listener, served by a thread of its own, that misbehaves on purpose. The
// trickling and flooding modes answer the first request of each connection with a reply that
// announces more than it sends in time (trickle: one byte per `interval`) or more than any
// client should hold (flood: as fast as the client reads), and never answer another.
class FaultyServer {
 public:
  enum class Mode {
    stall,          // accepts and reads, never answers
    http_500,       // answers each request's head with "HTTP/1.1 500 Internal Server Error", closes
    garbage,        // answers the first bytes of a request with bytes of no protocol, closes
    redis_trickle,  // "$1000000\r\n", then one byte per interval
    redis_flood,    // "$400000000\r\n", then the 400 MB
    http_trickle,   // "200 OK" with Content-Length: 1000000, then one byte per interval
    http_flood,     // "200 OK" with Content-Length: 900000000, then the 900 MB
    http_chunked_flood,  // "200 OK", chunked without a length, 64 KiB chunks without end
  };

  // Listens on a free 127.0.0.1 port. Throws SystemError when it cannot.
  explicit FaultyServer(Mode mode, std::chrono::milliseconds interval = std::chrono::seconds(1));
  // Stops the thread and closes the listener and every connection.
  ~FaultyServer();
  FaultyServer(const FaultyServer&) = delete;
  FaultyServer& operator=(const FaultyServer&) = delete;

  int port() const { return port_; }
  // "<scheme>://127.0.0.1:<port>".
  std::string url(std::string_view scheme) const;
  // How many connections it accepted so far.
  int connections() const { return connections_.load(); }
  // How many bytes of replies it has sent so far, over every connection (what the kernel took:
  // a client that stops reading leaves at most its socket buffers' worth unread).
  long long bytes_sent() const { return bytes_sent_.load(); }

 private:
  struct Client;
  void serve();
  // Starts the answer of the modes that trickle or flood, once `client` sent a request.
  void start_answer(Client& client) const;
  // Adds to what `client` is to be sent what is due by `now`.
  void refill(Client& client, std::chrono::steady_clock::time_point now) const;

  Mode mode_;
  std::chrono::milliseconds interval_;
  int listener_ = -1;
  int port_ = 0;
  int wake_[2] = {-1, -1};
  std::atomic<int> connections_{0};
  std::atomic<long long> bytes_sent_{0};
  std::thread thread_;
};

}  // namespace kiln::testing
