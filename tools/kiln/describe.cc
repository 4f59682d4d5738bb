// kiln describe [--json]: version, git commit, compiler, platform and the options map.
#include <iostream>
#include <memory>

#include "commands.h"
#include "kiln/libinfo.h"

namespace kiln::cli {

void add_describe(CLI::App& app, int* status) {
  auto json = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand(
      "describe", "Print kiln's version, build, platform and what it can drive on this machine");
  sub->add_flag("--json", *json, "Print one JSON object instead of text");
  sub->callback([json, status] {
    require_no_passthrough("describe");
    Description d = describe();
    std::cout << (*json ? describe_json(d) : describe_text(d)) << std::flush;
    *status = kExitOk;
  });
}

}  // namespace kiln::cli
