// The Redis backend of kiln/remote_store.h, on hiredis (linked statically into kiln): blocking
// connections with socket time limits, one per concurrent caller, kept idle for reuse.
#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <vector>

#include <fmt/format.h>

#include "internal/remote_backends.h"

namespace kiln::internal {
namespace {

using Connection = IdlePool<redisContext>::Owned;

struct FreeReply {
  void operator()(redisReply* reply) const { freeReplyObject(reply); }
};
using Reply = std::unique_ptr<redisReply, FreeReply>;

timeval to_timeval(std::chrono::milliseconds limit) {
  auto ms = std::max<std::int64_t>(limit.count(), 1);
  return timeval{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>(ms % 1000 * 1000)};
}

// Whether `connection` failed in a system call with `error_number` (hiredis keeps only its text,
// strerror_r's).
bool io_error_is(const redisContext& connection, int error_number) {
  return connection.err == REDIS_ERR_IO &&
         std::string_view(connection.errstr) == std::strerror(error_number);
}

std::string_view type_name(int type) {
  switch (type) {
    case REDIS_REPLY_STRING:
      return "a string";
    case REDIS_REPLY_ARRAY:
      return "an array";
    case REDIS_REPLY_INTEGER:
      return "an integer";
    case REDIS_REPLY_NIL:
      return "nil";
    case REDIS_REPLY_STATUS:
      return "a status";
    case REDIS_REPLY_ERROR:
      return "an error";
    default:
      return "an unknown type";
  }
}

class RedisStore final : public RemoteStore {
 public:
  explicit RedisStore(const RemoteStoreOptions& options)
      : options_(options), name_(redacted_url(options.url)) {}

  std::optional<std::string> get(std::string_view kind, std::string_view hex) override {
    std::string key = object_key(kind, hex);
    Reply reply = command("GET " + key, {"GET", key});
    if (reply->type == REDIS_REPLY_NIL) return std::nullopt;
    expect(reply, REDIS_REPLY_STRING, "GET " + key);
    return std::string(reply->str, reply->len);
  }

  void put(std::string_view kind, std::string_view hex, std::string_view bytes) override {
    std::string key = object_key(kind, hex);
    Reply reply = command("SET " + key, {"SET", key, bytes});
    expect(reply, REDIS_REPLY_STATUS, "SET " + key);
  }

  bool contains(std::string_view kind, std::string_view hex) override {
    std::string key = object_key(kind, hex);
    Reply reply = command("EXISTS " + key, {"EXISTS", key});
    expect(reply, REDIS_REPLY_INTEGER, "EXISTS " + key);
    return reply->integer > 0;
  }

  void remove(std::string_view kind, std::string_view hex) override {
    std::string key = object_key(kind, hex);
    Reply reply = command("DEL " + key, {"DEL", key});
    expect(reply, REDIS_REPLY_INTEGER, "DEL " + key);
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

  void expect(const Reply& reply, int type, std::string_view operation) const {
    if (reply->type != type) {
      throw error(operation, fmt::format("the server answered with {}, not {}",
                                         type_name(reply->type), type_name(type)));
    }
  }

  // What went wrong on `connection`, in words.
  std::string failure(const redisContext& connection) const {
    if (connection.err == REDIS_ERR_EOF) return "the server closed the connection";
    if (io_error_is(connection, EAGAIN)) {
      return fmt::format("no answer within {} ms", options_.operation_timeout.count());
    }
    return connection.errstr;
  }

  static Reply send(redisContext& connection, std::initializer_list<std::string_view> args) {
    std::vector<const char*> argv;
    std::vector<size_t> lengths;
    for (std::string_view arg : args) {
      argv.push_back(arg.data());
      lengths.push_back(arg.size());
    }
    return Reply(static_cast<redisReply*>(
        redisCommandArgv(&connection, static_cast<int>(argv.size()), argv.data(), lengths.data())));
  }

  // Runs one command of a new connection's setup (AUTH, SELECT); throws RemoteStoreError, with
  // the server's words when it answers an error.
  Reply setup_command(redisContext& connection, std::string_view operation,
                      std::initializer_list<std::string_view> args) const {
    Reply reply = send(connection, args);
    if (!reply) throw error(operation, failure(connection));
    if (reply->type == REDIS_REPLY_ERROR) {
      throw error(operation,
                  fmt::format("the server refused: {}", std::string_view(reply->str, reply->len)));
    }
    return reply;
  }

  Connection connect() const {
    timeval limit = to_timeval(options_.connect_timeout);
    redisContext* raw = options_.scheme == RemoteStoreOptions::Scheme::redis_unix
                            ? redisConnectUnixWithTimeout(options_.socket.c_str(), limit)
                            : redisConnectWithTimeout(options_.host.c_str(), options_.port, limit);
    if (raw == nullptr) throw error("connecting", "out of memory");
    Connection connection(raw, redisFree);
    if (connection->err != 0) throw error("connecting", connection->errstr);
    if (redisSetTimeout(connection.get(), to_timeval(options_.operation_timeout)) != REDIS_OK) {
      throw error("connecting", fmt::format("setting the time limit: {}", connection->errstr));
    }
    if (options_.password) {
      if (options_.user) {
        setup_command(*connection, "AUTH", {"AUTH", *options_.user, *options_.password});
      } else {
        setup_command(*connection, "AUTH", {"AUTH", *options_.password});
      }
    }
    if (options_.database != 0) {
      std::string database = std::to_string(options_.database);
      setup_command(*connection, "SELECT " + database, {"SELECT", database});
    }
    return connection;
  }

  // Sends one command on an idle connection, else a new one, and returns the reply, which is
  // never an error reply. A connection that had any fault is closed, not kept. An idle one the
  // server closed meanwhile (a restart, its idle timeout, CLIENT KILL) fails at once; the command
  // is then sent again on the next (every command kiln sends is idempotent), until one that was
  // not idle fails.
  Reply command(std::string_view operation, std::initializer_list<std::string_view> args) {
    SigpipeBlocked sigpipe;
    for (;;) {
      Connection connection = pool_.take();
      bool reused = connection != nullptr;
      if (!reused) connection = connect();
      Reply reply = send(*connection, args);
      if (reply && reply->type != REDIS_REPLY_ERROR) {
        pool_.give_back(std::move(connection));
        return reply;
      }
      if (reply) {
        throw error(operation, fmt::format("the server answered: {}",
                                           std::string_view(reply->str, reply->len)));
      }
      bool closed = connection->err == REDIS_ERR_EOF || io_error_is(*connection, ECONNRESET) ||
                    io_error_is(*connection, EPIPE);
      if (reused && closed) continue;
      throw error(operation, failure(*connection));
    }
  }

  RemoteStoreOptions options_;
  std::string name_;
  IdlePool<redisContext> pool_;
};

}  // namespace

std::unique_ptr<RemoteStore> open_redis_store(const RemoteStoreOptions& options) {
  return std::make_unique<RedisStore>(options);
}

}  // namespace kiln::internal
