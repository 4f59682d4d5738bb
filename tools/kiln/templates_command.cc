// kiln templates [--stop] [--json]: this user's worker template services (kiln/pool.h,
// KILN_POOL_TEMPLATE_SERVICE), where their sockets live, and a way to end them.
#include <algorithm>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "kiln/pool.h"
#include "kiln/text.h"

namespace kiln::cli {

void add_templates(CLI::App& app, int* status) {
  CLI::App* cmd = app.add_subcommand(
      "templates",
      "This user's worker template services (warm Python workers that outlive their process)");
  auto stop = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--stop", *stop,
                "Tell each to stop: it serves no new process and ends once its workers have");
  cmd->add_flag("--json", *json, "The services as JSON on stdout");
  cmd->callback([status, stop, json] {
    require_no_passthrough("templates");
    std::filesystem::path dir = pool::template_service_directory();
    std::vector<pool::TemplateService> services = pool::template_services(*stop);
    if (*json) {
      nlohmann::json rows = nlohmann::json::array();
      for (const pool::TemplateService& service : services) {
        rows.push_back({{"socket", service.socket.string()}, {"status", service.status}});
      }
      std::cout << json_text({{"directory", dir.string()}, {"services", rows}}, 2) << "\n";
    } else {
      std::cout << fmt::format("template services in {}: {}\n", dir.string(), services.size());
      for (const pool::TemplateService& service : services) {
        std::string line = service.status;
        std::replace(line.begin(), line.end(), '\n', ' ');
        std::cout << fmt::format("  {}  {}\n", service.socket.filename().string(), printable(line));
      }
    }
    *status = kExitOk;
  });
}

}  // namespace kiln::cli
