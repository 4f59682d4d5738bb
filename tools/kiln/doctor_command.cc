// kiln doctor [--json] [--source DIR] [--library FILE] [--llvm-config PATH] [--python PY]: the
// build-environment checks, as a table or as JSON. kiln doctor --dist [--launcher ENGINE]
// [--timeout S]: the distributed compile engine's checks instead.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "kiln/doctor.h"
#include "kiln/launcher.h"
#include "kiln/text.h"

namespace kiln::cli {
namespace {

std::string coloured(doctor::Status status, bool colour) {
  std::string name(doctor::status_name(status));
  if (!colour) return name;
  const char* code = status == doctor::Status::pass   ? "32"
                     : status == doctor::Status::warn ? "33"
                                                      : "31";
  return fmt::format("\x1b[{}m{}\x1b[0m", code, name);
}

// Prints the findings as a table (coloured on a terminal) or as JSON; true when any FAILed.
bool print_findings(const std::vector<doctor::Finding>& findings, bool json) {
  bool failed = false;
  if (json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& f : findings) {
      list.push_back({{"check", f.check},
                      {"status", std::string(doctor::status_name(f.status))},
                      {"finding", f.finding},
                      {"fix", f.fix}});
    }
    std::cout << json_text(list, 2) << "\n";
  } else {
    bool colour = ::isatty(STDOUT_FILENO) != 0;
    size_t width = 0;
    for (const auto& f : findings) width = std::max(width, f.check.size());
    for (const auto& f : findings) {
      std::cout << fmt::format("{:<{}}  {}  {}\n", f.check, width, coloured(f.status, colour),
                               f.finding);
      if (!f.fix.empty()) std::cout << fmt::format("{:<{}}        fix: {}\n", "", width, f.fix);
    }
  }
  for (const auto& f : findings) failed = failed || f.status == doctor::Status::fail;
  return failed;
}

}  // namespace

void add_doctor(CLI::App& app, int* status) {
  auto json = std::make_shared<bool>(false);
  auto options = std::make_shared<doctor::Options>();
  CLI::App* sub = app.add_subcommand(
      "doctor", "Check this machine for the TVM build guide's traps (exit 1 when any FAILs)");
  sub->add_flag("--json", *json, "Print a JSON array of {check, status, finding, fix}");
  sub->add_option("--source", options->source,
                  "A git checkout (e.g. of TVM): check each submodule's commit");
  sub->add_option("--library", options->library,
                  "A built shared library (e.g. build/libtvm.so): check what it needs");
  sub->add_option("--llvm-config", options->llvm_config,
                  "The llvm-config to judge (default: the first on PATH)");
  sub->add_option("--python", options->python,
                  "The Python whose `import tvm` to check (default: python3 on PATH)");
  auto dist = std::make_shared<bool>(false);
  auto dist_options = std::make_shared<doctor::DistOptions>();
  CLI::Option* dist_flag = sub->add_flag(
      "--dist", *dist,
      "Check the distributed compile engine instead, end to end: scheduler, servers, auth and "
      "a trivial remote compile");
  std::vector<std::string> engines = distributing_launcher_names();
  sub->add_option("--launcher", dist_options->engine,
                  fmt::format("With --dist: the engine (default: the first on PATH of {})",
                              fmt::join(engines, ", ")))
      ->check(CLI::IsMember(engines))
      ->needs(dist_flag);
  sub->add_option_function<int>(
         "--timeout",
         [dist_options](int seconds) { dist_options->timeout = std::chrono::seconds(seconds); },
         "With --dist: seconds each probe may take (a trivial compile: three times as long; "
         "default 20)")
      ->check(CLI::Range(1, 3600))
      ->needs(dist_flag);
  sub->callback([json, options, dist, dist_options, status] {
    require_no_passthrough("doctor");
    std::vector<doctor::Finding> findings =
        *dist ? doctor::check_dist(*dist_options) : doctor::run_checks(*options);
    *status = print_findings(findings, *json) ? kExitFailed : kExitOk;
  });
}

}  // namespace kiln::cli
