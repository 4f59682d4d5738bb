#include "testing/cache_servers.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "kiln/error.h"
#include "kiln/paths.h"
#include "testing/test_support.h"

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr auto kStartLimit = 10s;
constexpr int kStartAttempts = 5;

sockaddr_in loopback(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  return address;
}

// Parses one reply at the front of `text` into `reply`: the bytes it took, or 0 when `text`
// does not hold a whole reply yet.
size_t parse_resp(std::string_view text, RespReply& reply) {
  size_t end = text.find("\r\n");
  if (end == std::string_view::npos) return 0;
  std::string head(text.substr(1, end - 1));
  size_t after = end + 2;
  switch (text[0]) {
    case '+':
      reply.strings.push_back(head);
      return after;
    case '-':
      reply.error = head;
      return after;
    case ':':
      reply.integer = std::stoll(head);
      return after;
    case '$': {
      long long size = std::stoll(head);
      if (size < 0) return after;  // nil
      auto bytes = static_cast<size_t>(size);
      if (text.size() < after + bytes + 2) return 0;
      reply.strings.emplace_back(text.substr(after, bytes));
      return after + bytes + 2;
    }
    case '*': {
      long long count = std::stoll(head);
      for (long long i = 0; i < count; ++i) {
        size_t used = parse_resp(text.substr(after), reply);
        if (used == 0) return 0;
        after += used;
      }
      return after;
    }
    default:
      throw std::runtime_error("not a RESP reply: " + std::string(text.substr(0, 40)));
  }
}

// A connected socket (1 s limits on reads and writes), or -1.
int connect_to(int port, const fs::path& socket_path) {
  int family = socket_path.empty() ? AF_INET : AF_UNIX;
  int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval limit{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  int result = -1;
  if (family == AF_INET) {
    sockaddr_in address = loopback(port);
    result = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  } else {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::string path = socket_path.string();
    if (path.size() >= sizeof address.sun_path) {
      ::close(fd);
      return -1;
    }
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    result = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  }
  if (result != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Whether a Redis server answers PING there (+PONG, or -NOAUTH when it wants a password).
bool answers_ping(int port, const fs::path& socket_path) {
  int fd = connect_to(port, socket_path);
  if (fd < 0) return false;
  constexpr std::string_view kPing = "PING\r\n";
  char reply[64] = {};
  bool ok =
      ::send(fd, kPing.data(), kPing.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(kPing.size()) &&
      ::recv(fd, reply, sizeof reply - 1, 0) > 0 && (reply[0] == '+' || reply[0] == '-');
  ::close(fd);
  return ok;
}

bool accepts_connections(int port) {
  int fd = connect_to(port, {});
  if (fd >= 0) ::close(fd);
  return fd >= 0;
}

// Waits until `ready()` or the process ends or kStartLimit passes; "" when ready, else why not.
template <typename Ready>
std::string wait_until_ready(BackgroundProcess& process, Ready ready) {
  auto deadline = std::chrono::steady_clock::now() + kStartLimit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return {};
    if (!process.running()) return "it exited";
    std::this_thread::sleep_for(10ms);
  }
  return "it did not answer within 10 s";
}

std::optional<fs::path> find_program(std::string_view name) {
  if (std::optional<fs::path> found = which(name)) return found;
  for (const char* directory : {"/usr/sbin", "/usr/local/sbin", "/sbin"}) {
    fs::path candidate = fs::path(directory) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

std::string with_userinfo(std::string_view scheme, std::string_view userinfo,
                          std::string_view rest) {
  if (userinfo.empty()) return fmt::format("{}://{}", scheme, rest);
  return fmt::format("{}://{}@{}", scheme, userinfo, rest);
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) throw SystemError("write " + path.string(), errno);
}

}  // namespace

int unused_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address = loopback(0);
  socklen_t length = sizeof address;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  ::close(fd);
  return port;
}

// --- redis_command ---

RespReply redis_command(int port, const std::vector<std::string>& words) {
  RespReply reply;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval limit{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  sockaddr_in address = loopback(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    reply.error = "cannot connect";
    return reply;
  }
  std::string request = fmt::format("*{}\r\n", words.size());
  for (const std::string& word : words) request += fmt::format("${}\r\n{}\r\n", word.size(), word);
  (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string received;
  char buffer[65536];
  for (;;) {
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) {
      reply.error = "no whole reply";
      break;
    }
    received.append(buffer, static_cast<size_t>(n));
    if (parse_resp(received, reply) != 0) break;
    reply = {};
  }
  ::close(fd);
  return reply;
}

// --- RedisServer ---

std::optional<std::string> RedisServer::missing() {
  if (find_program("redis-server")) return std::nullopt;
  return "redis-server is not installed (Debian: apt-get install redis-server; "
         "scripts/install-deps.sh --tests)";
}

RedisServer::RedisServer(const Options& options) : options_(options) {
  if (auto why = missing()) {
    why_ = *why;
    return;
  }
  std::string failure;
  for (int attempt = 0; attempt < kStartAttempts; ++attempt) {
    if (start(options, failure)) return;
    bool clash = log().find("Address already in use") != std::string::npos;
    if (!clash || options.unix_socket) break;
  }
  why_ = fmt::format("redis-server did not start ({}); its log:\n{}", failure, log());
}

bool RedisServer::start(const Options& options, std::string& failure) {
  // No persistence, no daemon, the log on stdout (BackgroundProcess's log), loopback only.
  std::vector<std::string> argv = {find_program("redis-server")->string()};
  argv.insert(argv.end(), {"--save", "", "--appendonly", "no", "--daemonize", "no"});
  argv.insert(argv.end(), {"--logfile", "", "--bind", "127.0.0.1"});
  argv.insert(argv.end(), {"--dir", directory_.path().string()});
  if (options.unix_socket) {
    socket_ = directory_ / "redis.sock";
    port_ = 0;
    argv.insert(argv.end(),
                {"--port", "0", "--unixsocket", socket_.string(), "--unixsocketperm", "700"});
  } else {
    port_ = unused_loopback_port();
    argv.insert(argv.end(), {"--port", std::to_string(port_)});
  }
  if (!options.password.empty()) argv.insert(argv.end(), {"--requirepass", options.password});
  if (!options.acl_user.empty()) {
    argv.insert(argv.end(),
                {"--user", options.acl_user, "on", ">" + options.acl_password, "~*", "+@all"});
  }
  process_.reset();  // a failed attempt's server
  fs::remove(directory_ / "redis.log");
  process_ = std::make_unique<BackgroundProcess>(argv, BackgroundProcess::Environment{},
                                                 directory_ / "redis.log");
  failure = wait_until_ready(*process_, [&] { return answers_ping(port_, socket_); });
  if (!failure.empty()) process_->stop();
  return failure.empty();
}

std::string RedisServer::url_with(std::string_view userinfo) const {
  if (options_.unix_socket) return with_userinfo("redis+unix", userinfo, socket_.string());
  return with_userinfo("redis", userinfo, fmt::format("127.0.0.1:{}", port_));
}

std::string RedisServer::url() const {
  if (!options_.acl_user.empty()) {
    return url_with(fmt::format("{}:{}", options_.acl_user, options_.acl_password));
  }
  if (!options_.password.empty()) return url_with(":" + options_.password);
  return url_with("");
}

std::string RedisServer::ask(std::string_view command) const {
  int fd = connect_to(port_, socket_);
  if (fd < 0) return {};
  std::string reply;
  auto exchange = [&](const std::string& line) {
    std::string sent = line + "\r\n";
    reply.clear();
    if (::send(fd, sent.data(), sent.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(sent.size())) {
      return false;
    }
    char byte = 0;
    while (::recv(fd, &byte, 1, 0) == 1 && byte != '\n') reply += byte;
    if (reply.ends_with('\r')) reply.pop_back();
    return !reply.empty();
  };
  bool ok = true;
  if (!options_.acl_user.empty()) {
    ok = exchange(fmt::format("AUTH {} {}", options_.acl_user, options_.acl_password));
  } else if (!options_.password.empty()) {
    ok = exchange("AUTH " + options_.password);
  }
  if (ok) exchange(std::string(command));
  ::close(fd);
  return reply;
}

void RedisServer::stop() {
  if (process_) process_->stop();
}

void RedisServer::kill() {
  if (process_) process_->kill();
}

std::string RedisServer::log() const { return read_file(directory_ / "redis.log"); }

// --- WebdavServer ---

std::optional<std::string> WebdavServer::missing() {
  if (find_program("nginx")) return std::nullopt;
  return "nginx is not installed (Debian: apt-get install nginx; scripts/install-deps.sh --tests)";
}

WebdavServer::WebdavServer(const Options& options)
    : options_(options), objects_(directory_ / "objects") {
  if (auto why = missing()) {
    why_ = *why;
    return;
  }
  fs::create_directories(objects_);
  fs::create_directories(directory_ / "body");
  std::string failure;
  for (int attempt = 0; attempt < kStartAttempts; ++attempt) {
    if (start(failure)) return;
    if (log().find("Address already in use") == std::string::npos) break;
  }
  why_ = fmt::format("nginx did not start ({}); its log:\n{}", failure, log());
}

void WebdavServer::write_config() const {
  const fs::path& dir = directory_.path();
  std::string auth;
  if (!options_.user.empty()) {
    write_text(dir / "htpasswd", fmt::format("{}:{{PLAIN}}{}\n", options_.user, options_.password));
    auth = fmt::format("      auth_basic \"kiln test cache\";\n      auth_basic_user_file {};\n",
                       (dir / "htpasswd").string());
  }
  // Root's workers would run as nobody, who cannot write this private directory.
  std::string user = ::geteuid() == 0 ? "user root;\n" : "";
  std::string temp;
  for (const char* kind : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"}) {
    temp += fmt::format("  {}_temp_path {};\n", kind, (dir / "body").string());
  }
  write_text(dir / "nginx.conf",
             fmt::format("{}worker_processes 1;\nerror_log {} warn;\n"
                         "events {{ worker_connections 256; }}\n"
                         "http {{\n  access_log off;\n{}  client_max_body_size 0;\n"
                         "  server {{\n    listen 127.0.0.1:{};\n    root {};\n"
                         "    location / {{\n      dav_methods PUT DELETE;\n"
                         "      create_full_put_path on;\n      dav_access user:rw;\n{}"
                         "    }}\n  }}\n}}\n",
                         user, (dir / "error.log").string(), temp, port_, objects_.string(), auth));
}

bool WebdavServer::start(std::string& failure) {
  port_ = unused_loopback_port();
  write_config();
  const fs::path& dir = directory_.path();
  std::vector<std::string> argv = {find_program("nginx")->string(), "-p", dir.string()};
  argv.insert(argv.end(),
              {"-c", (dir / "nginx.conf").string(), "-e", (dir / "error.log").string()});
  argv.insert(argv.end(), {"-g", fmt::format("daemon off; pid {};", (dir / "nginx.pid").string())});
  process_.reset();  // a failed attempt's server
  fs::remove(dir / "error.log");
  fs::remove(dir / "nginx.out");
  process_ = std::make_unique<BackgroundProcess>(argv, BackgroundProcess::Environment{},
                                                 dir / "nginx.out");
  failure = wait_until_ready(*process_, [&] { return accepts_connections(port_); });
  if (!failure.empty()) process_->stop();
  return failure.empty();
}

std::string WebdavServer::url_with(std::string_view userinfo) const {
  return with_userinfo("http", userinfo, fmt::format("127.0.0.1:{}", port_));
}

std::string WebdavServer::url() const {
  if (options_.user.empty()) return url_with("");
  return url_with(fmt::format("{}:{}", options_.user, options_.password));
}

fs::path WebdavServer::object_path(std::string_view kind, std::string_view hex) const {
  return objects_ / kind / hex;
}

void WebdavServer::stop() {
  if (process_) process_->stop();
}

void WebdavServer::kill() {
  if (process_) process_->kill();
}

std::string WebdavServer::log() const {
  return read_file(directory_ / "error.log") + read_file(directory_ / "nginx.out");
}

// --- FaultyServer ---

struct FaultyServer::Client {
  std::string received;  // what the client sent so far
  bool answering = false;
  std::string pending;      // bytes to send as soon as the client takes them
  long long body_left = 0;  // body bytes not yet in `pending`
  bool chunked = false;
  std::chrono::steady_clock::time_point next_byte{};  // trickle: when the next byte is due
};

FaultyServer::FaultyServer(Mode mode, std::chrono::milliseconds interval)
    : mode_(mode), interval_(interval) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address = loopback(0);
  socklen_t length = sizeof address;
  if (listener_ < 0 ||
      ::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listener_, 64) != 0 ||
      ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0 ||
      ::pipe2(wake_, O_CLOEXEC) != 0) {
    int error = errno;
    for (int fd : {listener_, wake_[0], wake_[1]}) {
      if (fd >= 0) ::close(fd);
    }
    throw SystemError("FaultyServer: listen on 127.0.0.1", error);
  }
  port_ = ntohs(address.sin_port);
  thread_ = std::thread([this] { serve(); });
}

FaultyServer::~FaultyServer() {
  char byte = 0;
  (void)::write(wake_[1], &byte, 1);
  thread_.join();
  for (int fd : {listener_, wake_[0], wake_[1]}) ::close(fd);
}

std::string FaultyServer::url(std::string_view scheme) const {
  return fmt::format("{}://127.0.0.1:{}", scheme, port_);
}

namespace {

bool is_trickle(FaultyServer::Mode mode) {
  return mode == FaultyServer::Mode::redis_trickle || mode == FaultyServer::Mode::http_trickle;
}

bool is_flood(FaultyServer::Mode mode) {
  return mode == FaultyServer::Mode::redis_flood || mode == FaultyServer::Mode::http_flood ||
         mode == FaultyServer::Mode::http_chunked_flood;
}

// The immediate answer of the modes that answer once and close; "" for none (yet).
std::string_view closing_answer(FaultyServer::Mode mode, const std::string& received) {
  if (mode == FaultyServer::Mode::http_500 && received.find("\r\n\r\n") != std::string::npos) {
    return "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
  }
  if (mode == FaultyServer::Mode::garbage && !received.empty()) {
    return "\x01\x02 no protocol at all \xff\xfe\r\n\r\n";
  }
  return {};
}

}  // namespace

void FaultyServer::start_answer(Client& client) const {
  bool http =
      mode_ == Mode::http_trickle || mode_ == Mode::http_flood || mode_ == Mode::http_chunked_flood;
  if (http ? client.received.find("\r\n\r\n") == std::string::npos : client.received.empty()) {
    return;  // no whole request yet
  }
  client.answering = true;
  client.next_byte = std::chrono::steady_clock::now();
  switch (mode_) {
    case Mode::redis_trickle:
      client.pending = "$1000000\r\n";
      client.body_left = 1000000;
      break;
    case Mode::redis_flood:
      client.pending = "$400000000\r\n";
      client.body_left = 400000000;
      break;
    case Mode::http_trickle:
      client.pending = "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n";
      client.body_left = 1000000;
      break;
    case Mode::http_flood:
      client.pending = "HTTP/1.1 200 OK\r\nContent-Length: 900000000\r\n\r\n";
      client.body_left = 900000000;
      break;
    case Mode::http_chunked_flood:
      client.pending = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
      client.body_left = std::numeric_limits<long long>::max();
      client.chunked = true;
      break;
    default:
      client.answering = false;
  }
}

void FaultyServer::refill(Client& client, std::chrono::steady_clock::time_point now) const {
  if (is_trickle(mode_) && client.body_left > 0 && now >= client.next_byte) {
    client.pending += 'x';
    --client.body_left;
    client.next_byte = now + interval_;
  }
  if (is_flood(mode_) && client.pending.empty() && client.body_left > 0) {
    constexpr long long kChunk = 65536;
    long long size = std::min(client.body_left, kChunk);
    if (client.chunked) client.pending = fmt::format("{:x}\r\n", size);
    client.pending.append(static_cast<size_t>(size), 'x');
    if (client.chunked) client.pending += "\r\n";
    client.body_left -= size;
  }
}

void FaultyServer::serve() {
  std::map<int, Client> clients;
  for (;;) {
    auto now = std::chrono::steady_clock::now();
    int timeout_ms = -1;
    std::vector<pollfd> fds = {{wake_[0], POLLIN, 0}, {listener_, POLLIN, 0}};
    for (auto& [fd, client] : clients) {
      refill(client, now);
      bool more = !client.pending.empty();
      fds.push_back({fd, static_cast<short>(POLLIN | (more ? POLLOUT : 0)), 0});
      if (client.answering && is_trickle(mode_) && client.body_left > 0) {
        auto wait = std::chrono::ceil<std::chrono::milliseconds>(client.next_byte - now).count();
        long long bounded = std::max<long long>(wait, 0);
        if (timeout_ms < 0 || bounded < timeout_ms) timeout_ms = static_cast<int>(bounded);
      }
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;
    if (fds[1].revents != 0) {
      int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (client >= 0) {
        clients.emplace(client, Client{});
        connections_.fetch_add(1);
      }
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      int fd = fds[i].fd;
      Client& client = clients[fd];
      bool gone = false;
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        char buffer[65536];
        ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n > 0 && !client.answering) client.received.append(buffer, static_cast<size_t>(n));
        gone = n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
      }
      std::string_view answer = gone ? std::string_view() : closing_answer(mode_, client.received);
      if (!answer.empty()) (void)::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
      if (!gone && !client.answering) start_answer(client);
      if (!gone && !client.pending.empty()) {
        ssize_t n =
            ::send(fd, client.pending.data(), client.pending.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
          client.pending.erase(0, static_cast<size_t>(n));
          bytes_sent_.fetch_add(n);
        }
        gone = n < 0 && errno != EAGAIN && errno != EINTR;
      }
      if (gone || !answer.empty()) {
        ::close(fd);
        clients.erase(fd);
      }
    }
  }
  for (const auto& [fd, client] : clients) ::close(fd);
}

}  // namespace kiln::testing
