// kiln rocm link|arch|bitcode.
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "kiln/rocm.h"
#include "kiln/text.h"

namespace kiln::cli {

void add_rocm(CLI::App& app, int* status) {
  CLI::App* rocm = app.add_subcommand("rocm", "ROCm: code objects, device libraries, GPU arch");
  rocm->require_subcommand(1);

  struct LinkArgs {
    std::string object;
    std::string output;
    std::string lld;
  };
  auto args = std::make_shared<LinkArgs>();
  CLI::App* link = rocm->add_subcommand(
      "link", "ld.lld --no-undefined -shared: an AMDGPU object to a code object");
  link->add_option("object", args->object, "The relocatable object")
      ->required()
      ->check(CLI::ExistingFile);
  link->add_option("-o,--output", args->output, "The code object to write")->required();
  link->add_option("--lld", args->lld, "The ld.lld to use (default: the first find_lld finds)");
  link->callback([args, status] {
    require_no_passthrough("rocm link");
    rocm::rocm_link(args->object, args->output, args->lld);
    *status = kExitOk;
  });

  CLI::App* arch = rocm->add_subcommand("arch",
                                        "The GPU architecture rocminfo reports (or gfx900, "
                                        "and why)");
  arch->callback([status] {
    require_no_passthrough("rocm arch");
    rocm::RocmArch found = rocm::get_rocm_arch();
    std::cout << found.arch << "\n";
    if (!found.reason.empty()) std::cerr << "kiln: note: " << found.reason << "\n";
    *status = kExitOk;
  });

  auto dir = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* bitcode =
      rocm->add_subcommand("bitcode", "The device-library bitcode files to link, in order");
  bitcode->add_option("--dir", *dir, "Look here (default: ROCm's, then the distribution's)");
  bitcode->add_flag("--json", *json, "Print a JSON array");
  bitcode->callback([dir, json, status] {
    require_no_passthrough("rocm bitcode");
    std::vector<std::filesystem::path> paths = rocm::callback_rocm_bitcode_path(*dir);
    if (*json) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& p : paths) list.push_back(p.string());
      std::cout << json_text(list, 2) << "\n";
    } else {
      for (const auto& p : paths) std::cout << p.string() << "\n";
    }
    *status = kExitOk;
  });
}

}  // namespace kiln::cli
