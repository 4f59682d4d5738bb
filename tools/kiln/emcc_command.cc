// kiln emcc wasm: a tvmjs WebAssembly module.
#include <memory>

#include "commands.h"
#include "kiln/emcc.h"

namespace kiln::cli {

void add_emcc(CLI::App& app, int* status) {
  CLI::App* emcc = app.add_subcommand("emcc", "Emscripten: tvmjs WebAssembly modules");
  emcc->require_subcommand(1);
  struct Args {
    std::string output;
    std::vector<std::string> inputs;
    std::vector<std::string> libs;
    std::string cc = "emcc";
  };
  auto args = std::make_shared<Args>();
  CLI::App* wasm = emcc->add_subcommand(
      "wasm", "Link objects with TVM's runtime libraries ($TVM_HOME/web/dist) into a .wasm");
  wasm->add_option("-o,--output", args->output, "The module to write")->required();
  wasm->add_option("inputs", args->inputs, "Objects (.o, .bc)")->required();
  wasm->add_option("--lib", args->libs, "Another library to link (repeatable; must exist)");
  wasm->add_option("--cc", args->cc, "The emcc to use");
  wasm->footer("Options after -- go to emcc, after the objects.");
  wasm->callback([args, status] {
    std::vector<std::filesystem::path> inputs(args->inputs.begin(), args->inputs.end());
    std::vector<std::filesystem::path> libs(args->libs.begin(), args->libs.end());
    emcc::create_tvmjs_wasm(args->output, inputs,
                            {.options = passthrough(), .cc = args->cc, .libs = libs});
    *status = kExitOk;
  });
}

}  // namespace kiln::cli
