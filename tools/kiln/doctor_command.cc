// kiln doctor [--json]: the build-environment checks, as a table or as JSON.
#include <unistd.h>

#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "kiln/doctor.h"

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

}  // namespace

void add_doctor(CLI::App& app, int* status) {
  auto json = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand(
      "doctor", "Check this machine for the TVM build guide's traps (exit 1 when any FAILs)");
  sub->add_flag("--json", *json, "Print a JSON array of {check, status, finding, fix}");
  sub->callback([json, status] {
    require_no_passthrough("doctor");
    std::vector<doctor::Finding> findings = doctor::run_checks();
    bool failed = false;
    if (*json) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& f : findings) {
        list.push_back({{"check", f.check},
                        {"status", std::string(doctor::status_name(f.status))},
                        {"finding", f.finding},
                        {"fix", f.fix}});
      }
      std::cout << list.dump(2) << "\n";
    } else {
      bool colour = ::isatty(STDOUT_FILENO) != 0;
      for (const auto& f : findings) {
        std::cout << fmt::format("{:<14} {}  {}\n", f.check, coloured(f.status, colour), f.finding);
        if (!f.fix.empty()) std::cout << fmt::format("{:<14}       fix: {}\n", "", f.fix);
      }
    }
    for (const auto& f : findings) failed = failed || f.status == doctor::Status::fail;
    *status = failed ? kExitFailed : kExitOk;
  });
}

}  // namespace kiln::cli
