// kiln clang emit-llvm: LLVM IR from files or inline source.
#include <iostream>
#include <memory>

#include "commands.h"
#include "kiln/clang.h"

namespace kiln::cli {

void add_clang(CLI::App& app, int* status) {
  CLI::App* clang = app.add_subcommand("clang", "clang and LLVM IR");
  clang->require_subcommand(1);
  auto inputs = std::make_shared<std::vector<std::string>>();
  auto output = std::make_shared<std::string>();
  auto compiler = std::make_shared<std::string>();
  CLI::App* emit =
      clang->add_subcommand("emit-llvm", "clang -S -emit-llvm: print the IR, or write it with -o");
  emit->add_option("inputs", *inputs, "Source files, or inline source code")->required();
  emit->add_option("-o,--output", *output, "Write the IR here instead of printing it");
  emit->add_option("--cc", *compiler, "The clang to use (default: the first find_clang finds)");
  emit->footer("Options after -- go to clang.");
  emit->callback([=] {
    std::string ir =
        clang::create_llvm(*inputs, {.output = *output, .options = passthrough(), .cc = *compiler});
    if (output->empty()) std::cout << ir;
    *status = kExitOk;
  });
}

}  // namespace kiln::cli
