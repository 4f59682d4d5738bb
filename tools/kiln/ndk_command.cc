// kiln ndk shared|static: the Android NDK's standalone compiler ($TVM_NDK_CC).
#include <iostream>
#include <memory>

#include "commands.h"
#include "kiln/ndk.h"

namespace kiln::cli {

void add_ndk(CLI::App& app, int* status) {
  CLI::App* ndk = app.add_subcommand("ndk", "Android NDK: $TVM_NDK_CC and the tools beside it");
  ndk->require_subcommand(1);
  struct Args {
    std::string output;
    std::vector<std::string> inputs;
  };
  auto shared_args = std::make_shared<Args>();
  CLI::App* shared = ndk->add_subcommand("shared",
                                         "$TVM_NDK_CC -o OUT INPUTS... options "
                                         "(default -shared -fPIC -lm)");
  shared->add_option("-o,--output", shared_args->output, "The library to write")->required();
  shared->add_option("inputs", shared_args->inputs, "Objects and sources")->required();
  shared->footer("Options after -- replace the defaults.");
  shared->callback([shared_args, status] {
    std::vector<std::filesystem::path> inputs(shared_args->inputs.begin(),
                                              shared_args->inputs.end());
    std::optional<std::vector<std::string>> options;
    if (!passthrough().empty()) options = passthrough();
    ndk::create_shared(shared_args->output, inputs, options);
    *status = kExitOk;
  });
  auto static_args = std::make_shared<Args>();
  CLI::App* archive =
      ndk->add_subcommand("static", "llvm-ar qcs + llvm-ranlib beside $TVM_NDK_CC (.tar unpacked)");
  archive->add_option("-o,--output", static_args->output, "The archive to write")->required();
  archive->add_option("inputs", static_args->inputs, "Objects and .tar bundles")->required();
  archive->callback([static_args, status] {
    require_no_passthrough("ndk static");
    std::vector<std::filesystem::path> inputs(static_args->inputs.begin(),
                                              static_args->inputs.end());
    ndk::create_staticlib(static_args->output, inputs);
    *status = kExitOk;
  });
}

}  // namespace kiln::cli
