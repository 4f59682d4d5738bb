// kiln doctor [--json] [--source DIR] [--library FILE] [--llvm-config PATH] [--python PY]: the
// build-environment checks, as a table or as JSON.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "kiln/doctor.h"
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
  sub->callback([json, options, status] {
    require_no_passthrough("doctor");
    std::vector<doctor::Finding> findings = doctor::run_checks(*options);
    bool failed = false;
    if (*json) {
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
    *status = failed ? kExitFailed : kExitOk;
  });
}

}  // namespace kiln::cli
