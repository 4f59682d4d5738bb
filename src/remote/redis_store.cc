// The Redis backend of kiln/remote_store.h (the registry's rows "redis" and "redis+unix", and its
// refusal of "rediss"): kiln's own RESP2 exchange over non-blocking sockets, one connection per
// concurrent caller, kept idle for reuse. Everything an operation does
// (looking up the host, connecting, AUTH, SELECT, the command and its whole reply) happens within
// one deadline, in poll loops: a server that trickles a reply a byte at a time is as bounded as
// one that stalls. A bulk reply longer than the caller's limit is refused at its "$<length>"
// line, before a byte of it is read.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <initializer_list>

#include <fmt/format.h>

#include "internal/backend_registry.h"
#include "internal/fd.h"
#include "internal/store_support.h"
#include "kiln/enum_names.h"

namespace kiln::internal {
namespace {

using Clock = std::chrono::steady_clock;

// A line longer than this (a status, an error, an integer or a length) is not RESP kiln reads.
constexpr size_t kMaxLine = 64 << 10;
// What one recv(2) asks for: a reply's first line (and with it a small reply whole), and at
// most at a time of a long string (whose rest is asked for exactly, so as never to read past).
constexpr size_t kLineChunk = 4096;
constexpr size_t kReadChunk = 256 << 10;

struct Connection {
  UniqueFd fd;
  std::string input;          // received, not yet taken by a reply
  bool received_any = false;  // during the current command
};
using Pooled = IdlePool<Connection>::Owned;

void close_connection(Connection* connection) { delete connection; }

enum class ReplyType { status, error, integer, bulk, nil };

struct Reply {
  ReplyType type = ReplyType::nil;
  std::string text{};  // a status, an error, a bulk string
  long long integer = 0;
};

// What a reply of each type is called in a message.
constexpr EnumName<ReplyType> kReplyTypeNames[] = {{ReplyType::status, "a status"},
                                                   {ReplyType::error, "an error"},
                                                   {ReplyType::integer, "an integer"},
                                                   {ReplyType::bulk, "a string"},
                                                   {ReplyType::nil, "nil"}};
static_assert(in_enum_order(kReplyTypeNames, ReplyType::nil), "a name for every ReplyType");

// Why an exchange failed. `closed`: the server went away (EOF, a reset) before any byte of the
// reply came, which on a connection taken from the pool means only that it was stale.
struct IoFailure {
  std::string what;
  bool closed = false;
};

// The command as a RESP array of bulk strings.
std::string encode(std::initializer_list<std::string_view> args) {
  std::string out = fmt::format("*{}\r\n", args.size());
  for (std::string_view arg : args) {
    out += fmt::format("${}\r\n", arg.size());
    out += arg;
    out += "\r\n";
  }
  return out;
}

// Waits until `fd` is ready for `events` or `deadline` passes; false on the deadline.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  pollfd entry{fd, events, 0};
  int ready = poll_until(&entry, 1, deadline);
  if (ready < 0) throw IoFailure{fmt::format("poll: {}", std::strerror(errno))};
  return ready > 0;
}

bool went_away(int error) { return error == EPIPE || error == ECONNRESET; }

void send_all(Connection& connection, std::string_view bytes, Clock::time_point deadline,
              std::string_view late) {
  while (!bytes.empty()) {
    ssize_t sent =
        ::send(connection.fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent >= 0) {
      bytes.remove_prefix(static_cast<size_t>(sent));
      continue;
    }
    int error = errno;
    if (error == EINTR) continue;
    if (error != EAGAIN && error != EWOULDBLOCK) {
      throw IoFailure{went_away(error) ? "the server closed the connection" : std::strerror(error),
                      went_away(error)};
    }
    if (!wait_for(connection.fd.get(), POLLOUT, deadline)) throw IoFailure{std::string(late)};
  }
}

// Reads what the server sent next, up to `want` bytes (at most kReadChunk), into
// connection.input, waiting until `deadline`.
void receive_more(Connection& connection, Clock::time_point deadline, std::string_view late,
                  size_t want) {
  want = std::clamp<size_t>(want, 1, kReadChunk);
  for (;;) {
    size_t old_size = connection.input.size();
    connection.input.resize(old_size + want);
    ssize_t got =
        ::recv(connection.fd.get(), connection.input.data() + old_size, want, MSG_DONTWAIT);
    int error = errno;
    connection.input.resize(old_size + static_cast<size_t>(std::max<ssize_t>(got, 0)));
    if (got > 0) {
      connection.received_any = true;
      return;
    }
    bool first = !connection.received_any;
    if (got == 0) throw IoFailure{"the server closed the connection", first};
    if (error == EINTR) continue;
    if (error != EAGAIN && error != EWOULDBLOCK) {
      throw IoFailure{went_away(error) ? "the server closed the connection" : std::strerror(error),
                      first && went_away(error)};
    }
    if (!wait_for(connection.fd.get(), POLLIN, deadline)) throw IoFailure{std::string(late)};
  }
}

// A decimal integer, all of `text`.
std::optional<long long> integer_of(std::string_view text) {
  long long value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

IoFailure protocol_error(std::string_view what) {
  return IoFailure{fmt::format("protocol error: {}", what)};
}

struct ReplyLimit {
  std::uint64_t max_bytes = 0;
  std::string_view kind{};
};

// Reads one reply (of the types kiln's commands get) off `connection`, taking its bytes from
// connection.input. A bulk string longer than `limit` fails at its length line.
Reply read_reply(Connection& connection, Clock::time_point deadline, ReplyLimit limit,
                 std::string_view late) {
  size_t line_end = 0;
  while ((line_end = connection.input.find("\r\n")) == std::string::npos) {
    if (connection.input.size() > kMaxLine) throw protocol_error("a reply line without an end");
    receive_more(connection, deadline, late, kLineChunk);
  }
  char type = connection.input[0];
  std::string_view line = std::string_view(connection.input).substr(1, line_end - 1);
  size_t used = line_end + 2;
  Reply reply;
  switch (type) {
    case '+':
    case '-':
      reply.type = type == '+' ? ReplyType::status : ReplyType::error;
      reply.text = std::string(line);
      break;
    case ':': {
      std::optional<long long> value = integer_of(line);
      if (!value) throw protocol_error("an integer reply that is not a number");
      reply.type = ReplyType::integer;
      reply.integer = *value;
      break;
    }
    case '$': {
      std::optional<long long> length = integer_of(line);
      if (!length || *length < -1) throw protocol_error("a string reply without a valid length");
      if (*length == -1) {
        reply.type = ReplyType::nil;
        break;
      }
      auto size = static_cast<std::uint64_t>(*length);
      if (size > limit.max_bytes) throw IoFailure{over_limit(size, limit.max_bytes, limit.kind)};
      connection.input.reserve(used + size + 2);
      while (connection.input.size() < used + size + 2) {
        receive_more(connection, deadline, late, used + size + 2 - connection.input.size());
      }
      if (connection.input.compare(used + size, 2, "\r\n") != 0) {
        throw protocol_error("a string reply longer than its length");
      }
      reply.type = ReplyType::bulk;
      reply.text = connection.input.substr(used, size);
      used += size + 2;
      break;
    }
    case '*':
      throw IoFailure{"the server answered with an array"};
    default:
      throw protocol_error(fmt::format("a reply that is not RESP (it begins with byte 0x{:02x})",
                                       static_cast<unsigned char>(type)));
  }
  connection.input.erase(0, used);
  return reply;
}

class RedisStore final : public RemoteStore {
 public:
  explicit RedisStore(const RemoteStoreOptions& options)
      : options_(options),
        name_(redacted_url(options.url)),
        resolver_(options.socket.empty()
                      ? std::make_unique<HostResolver>(options.host, options.port)
                      : nullptr) {}

  using RemoteStore::get;
  std::optional<std::string> get(std::string_view kind, std::string_view hex,
                                 std::uint64_t max_bytes) override {
    std::string key = object_key(kind, hex);
    Reply reply = command("GET " + key, {"GET", key}, {max_bytes, kind});
    if (reply.type == ReplyType::nil) return std::nullopt;
    expect(reply, ReplyType::bulk, "GET " + key);
    return std::move(reply.text);
  }

  void put(std::string_view kind, std::string_view hex, std::string_view bytes) override {
    std::string key = object_key(kind, hex);
    Reply reply = command("SET " + key, {"SET", key, bytes});
    expect(reply, ReplyType::status, "SET " + key);
  }

  bool contains(std::string_view kind, std::string_view hex) override {
    std::string key = object_key(kind, hex);
    Reply reply = command("EXISTS " + key, {"EXISTS", key});
    expect(reply, ReplyType::integer, "EXISTS " + key);
    return reply.integer > 0;
  }

  void remove(std::string_view kind, std::string_view hex) override {
    std::string key = object_key(kind, hex);
    Reply reply = command("DEL " + key, {"DEL", key});
    expect(reply, ReplyType::integer, "DEL " + key);
  }

  const std::string& name() const override { return name_; }

 private:
  std::string object_key(std::string_view kind, std::string_view hex) const {
    check_object_name(name_, kind, hex);
    return fmt::format("kiln:{}:{}", kind, hex);
  }

  RemoteStoreError error(std::string_view operation, std::string_view what) const {
    return RemoteStoreError(fmt::format("{}: {}: {}", name_, operation, what));
  }

  void expect(const Reply& reply, ReplyType type, std::string_view operation) const {
    if (reply.type != type) {
      throw error(operation, fmt::format("the server answered with {}, not {}",
                                         enum_name(kReplyTypeNames, reply.type),
                                         enum_name(kReplyTypeNames, type)));
    }
  }

  std::string late() const {
    return fmt::format("no answer within {} ms", options_.operation_timeout.count());
  }

  // One exchange on `connection`: the reply, or IoFailure.
  Reply exchange(Connection& connection, std::string_view request, Clock::time_point deadline,
                 ReplyLimit limit) const {
    connection.received_any = false;
    std::string too_late = late();
    send_all(connection, request, deadline, too_late);
    return read_reply(connection, deadline, limit, too_late);
  }

  // A command of a new connection's setup (AUTH, SELECT); throws RemoteStoreError, with the
  // server's words when it refuses.
  void setup_command(Connection& connection, std::string_view operation,
                     std::initializer_list<std::string_view> args,
                     Clock::time_point deadline) const {
    Reply reply;
    try {
      reply = exchange(connection, encode(args), deadline, {kMaxLine, "ac"});
    } catch (const IoFailure& failure) {
      throw error(operation, failure.what);
    }
    if (reply.type == ReplyType::error) {
      throw error(operation, fmt::format("the server refused: {}", reply.text));
    }
  }

  // A non-blocking socket connected to `address` by `deadline`; invalid with `why` set when not.
  static UniqueFd connect_to(const sockaddr* address, socklen_t length, Clock::time_point deadline,
                             std::string& why) {
    UniqueFd fd(::socket(address->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) {
      why = fmt::format("socket: {}", std::strerror(errno));
      return fd;
    }
    if (::connect(fd.get(), address, length) != 0) {
      if (errno != EINPROGRESS) {
        why = std::strerror(errno);
        return {};
      }
      pollfd entry{fd.get(), POLLOUT, 0};
      if (poll_until(&entry, 1, deadline) <= 0) {
        why = "no connection in time";
        return {};
      }
      int error = 0;
      socklen_t size = sizeof error;
      if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &size) != 0) error = errno;
      if (error != 0) {
        why = std::strerror(error);
        return {};
      }
    }
    if (address->sa_family != AF_UNIX) {
      int one = 1;
      (void)::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return fd;
  }

  UniqueFd open_socket(Clock::time_point deadline) const {
    Clock::time_point connect_deadline =
        std::min(deadline, Clock::now() + options_.connect_timeout);
    std::string why;
    if (!resolver_) {
      sockaddr_un address{};
      address.sun_family = AF_UNIX;
      std::string path = options_.socket.string();
      if (path.size() >= sizeof address.sun_path) {
        throw error("connecting", "the socket's path is too long");
      }
      std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
      UniqueFd fd = connect_to(reinterpret_cast<const sockaddr*>(&address), sizeof address,
                               connect_deadline, why);
      if (!fd) throw error("connecting", why);
      return fd;
    }
    HostResolver::Result found = resolver_->resolve(options_.connect_timeout, connect_deadline);
    if (!found.error.empty()) throw error("connecting", found.error);
    for (const HostAddress& address : found.addresses) {
      UniqueFd fd = connect_to(reinterpret_cast<const sockaddr*>(&address.address), address.length,
                               connect_deadline, why);
      if (fd) return fd;
      if (Clock::now() >= connect_deadline) break;
    }
    if (why == "no connection in time") {
      why = fmt::format("no connection within {} ms", options_.connect_timeout.count());
    }
    throw error("connecting", why);
  }

  Pooled connect(Clock::time_point deadline) const {
    Pooled connection(new Connection{.fd = open_socket(deadline), .input = {}}, close_connection);
    if (options_.password) {
      if (options_.user) {
        setup_command(*connection, "AUTH", {"AUTH", *options_.user, *options_.password}, deadline);
      } else {
        setup_command(*connection, "AUTH", {"AUTH", *options_.password}, deadline);
      }
    }
    if (options_.database != 0) {
      std::string database = std::to_string(options_.database);
      setup_command(*connection, "SELECT " + database, {"SELECT", database}, deadline);
    }
    return connection;
  }

  // Sends one command on an idle connection, else a new one, and returns the reply, which is
  // never an error reply; all of it within one operation_timeout. A connection goes back to the
  // pool only after a whole reply with nothing after it; one that failed in any way is closed.
  // An idle one the server closed meanwhile (a restart, its idle timeout, CLIENT KILL) fails at
  // once; the command is then sent again on the next (every command kiln sends is idempotent),
  // until one that was not idle fails.
  Reply command(std::string_view operation, std::initializer_list<std::string_view> args,
                ReplyLimit limit = {kMaxLine, "ac"}) {
    Clock::time_point deadline = Clock::now() + options_.operation_timeout;
    std::string request = encode(args);
    for (;;) {
      Pooled connection = pool_.take();
      bool reused = connection != nullptr;
      if (!reused) connection = connect(deadline);
      Reply reply;
      try {
        reply = exchange(*connection, request, deadline, limit);
      } catch (const IoFailure& failure) {
        if (reused && failure.closed) continue;
        throw error(operation, failure.what);
      }
      if (reply.type == ReplyType::error) {
        throw error(operation, fmt::format("the server answered: {}", reply.text));
      }
      if (connection->input.empty()) pool_.give_back(std::move(connection));
      return reply;
    }
  }

  RemoteStoreOptions options_;
  std::string name_;
  std::unique_ptr<HostResolver> resolver_;  // null for a unix socket
  IdlePool<Connection> pool_;
};

// redis://host/<db>; redis+unix:///path?db=<db>.
void parse_database(std::string_view url, const UrlParts& parts, RemoteStoreOptions& out) {
  if (parts.scheme == "redis") {
    if (parts.query) bad_url(url, "a query ('?...') is not understood in a redis:// URL");
    std::string_view db = parts.path.starts_with('/') ? parts.path.substr(1) : parts.path;
    if (db.empty()) return;
    std::optional<int> value = number_in(db, 0, 1 << 20);
    if (!value) bad_url(url, fmt::format("the database '{}' is not a number", db));
    out.database = *value;
    return;
  }
  if (!parts.query) return;
  if (!parts.query->starts_with("db=")) {
    bad_url(url, "the only query a redis+unix:// URL takes is ?db=N");
  }
  std::optional<int> value = number_in(parts.query->substr(3), 0, 1 << 20);
  if (!value) bad_url(url, "the database (?db=N) is not a number");
  out.database = *value;
}

void parse_redis(std::string_view url, const UrlParts& parts, RemoteStoreOptions& out) {
  parse_authority(url, parts.authority, 6379, out);
  parse_database(url, parts, out);
}

void parse_redis_unix(std::string_view url, const UrlParts& parts, RemoteStoreOptions& out) {
  if (!parts.authority.empty()) {
    bad_url(url, "a redis+unix:// URL names no host: redis+unix:///path/to/socket");
  }
  std::optional<std::string> path = percent_decoded(parts.path);
  if (!path || path->size() < 2) bad_url(url, "no socket path (redis+unix:///path/to/socket)");
  out.socket = *path;
  parse_database(url, parts, out);
}

std::unique_ptr<RemoteStore> open_redis_store(const RemoteStoreOptions& options) {
  return std::make_unique<RedisStore>(options);
}

}  // namespace

// The registry's rows (backends.cc).
extern const RemoteBackend kRedisBackend{
    .scheme = "redis",
    .form = "redis://[user:password@]host[:port][/db]",
    .description = "Redis over TCP (GET, SET, EXISTS of kiln:<kind>:<hex>)",
    .lone_secret = LoneSecret::password,
    .parse = &parse_redis,
    .open = &open_redis_store,
};
extern const RemoteBackend kRedisUnixBackend{
    .scheme = "redis+unix",
    .form = "redis+unix:///path/to/socket[?db=N]",
    .description = "Redis on a Unix socket",
    .lone_secret = LoneSecret::password,
    .parse = &parse_redis_unix,
    .open = &open_redis_store,
};
extern const RemoteBackend kRedisTlsRefused{
    .scheme = "rediss",
    .form = "rediss://...",
    .description = "Redis over TLS",
    .refusal = "Redis over TLS (rediss://) is not supported",
};

}  // namespace kiln::internal
