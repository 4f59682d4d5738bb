#include "sccache_client.h"

#include <fcntl.h>

#include <fmt/format.h>

#include "dist.h"
#include "internal/fd.h"
#include "internal/files.h"
#include "kiln/error.h"

namespace kiln::doctor::detail {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using internal::Clock;

std::string read_or_empty(const fs::path& file) {
  try {
    return internal::is_file(file) ? internal::read_file(file) : "";
  } catch (const Error&) {
    return "";
  }
}

}  // namespace

SccacheClient::SccacheClient(fs::path sccache, std::chrono::seconds timeout)
    : sccache_(std::move(sccache)), timeout_(timeout), socket_(dir_ / "server.sock") {
  fs::create_directory(scratch());
}

SccacheClient::~SccacheClient() {
  if (server_) server_->terminate_group(500ms);
}

std::string SccacheClient::start() {
  internal::UniqueFd out(
      ::open((dir_ / "server.out").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!out) throw SystemError("open '" + (dir_ / "server.out").string() + "'", errno);
  internal::SpawnSpec spec;
  spec.executable = sccache_;
  spec.argv = {sccache_.string()};
  // In the foreground: `sccache --start-server` would hand the server to a grandchild and return.
  spec.environment =
      internal::make_environment({{"SCCACHE_START_SERVER", "1"},
                                  {"SCCACHE_NO_DAEMON", "1"},
                                  {"SCCACHE_SERVER_UDS", socket_.string()},
                                  {"SCCACHE_SERVER_PORT", std::nullopt},
                                  {"SCCACHE_IDLE_TIMEOUT", "0"},
                                  {"SCCACHE_ERROR_LOG", (dir_ / "server.log").string()},
                                  {"SCCACHE_LOG", "debug"},
                                  {"SCCACHE_DIR", (dir_ / "cache").string()}},
                                 false);
  spec.fds = {{out.get(), 1}, {out.get(), 2}};
  server_ = internal::Child::spawn(spec);
  auto deadline = Clock::now() + timeout_;
  while (!fs::exists(socket_) && Clock::now() < deadline) {
    if (server_->wait_exit_until(Clock::now() + 10ms)) break;
  }
  if (fs::exists(socket_)) return "";
  if (server_->has_exited()) {
    server_->reap();
    return fmt::format("sccache's client server exited at once: {}", last_lines(log(), {}, 8));
  }
  return fmt::format("timed out: sccache's client server did not listen within {} s",
                     timeout_.count());
}

RunResult SccacheClient::command(std::vector<std::string> args,
                                 std::optional<std::chrono::seconds> limit) {
  args.insert(args.begin(), sccache_.string());
  if (!server_ || server_->has_exited()) {
    RunResult stopped{.output = "kiln's private sccache server is not running"};
    stopped.command_line = format_command_line(args);
    return stopped;
  }
  // Were the server gone after all, the client would start a detached one of its own: that one
  // ends 30 s after its last request instead of living on.
  return run({.argv = std::move(args),
              .cwd = scratch(),
              .env = {{"SCCACHE_SERVER_UDS", socket_.string()},
                      {"SCCACHE_SERVER_PORT", std::nullopt},
                      {"SCCACHE_START_SERVER", std::nullopt},
                      {"SCCACHE_IDLE_TIMEOUT", "30"}},
              .merge_stderr = false,
              .timeout = limit.value_or(timeout_)});
}

std::string SccacheClient::log() const {
  return read_or_empty(dir_ / "server.log") + read_or_empty(dir_ / "server.out");
}

}  // namespace kiln::doctor::detail
