// kiln cc shared|exe|object|static|triple|symbols: the cc module from the command line.
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "kiln/cc.h"
#include "kiln/error.h"
#include "kiln/launcher.h"
#include "kiln/paths.h"
#include "kiln/text.h"

namespace kiln::cli {
namespace {

struct CcArgs {
  std::string output;
  std::string cc;
  std::string launcher;
  std::string cwd;
  double timeout_seconds = 0;
  std::vector<std::string> inputs;
  std::vector<std::string> libs;
};

using BuildFn = RunResult (*)(const std::filesystem::path&,
                              const std::vector<std::filesystem::path>&, const cc::Options&);

cc::Options to_options(const CcArgs& args) {
  cc::Options options{.options = passthrough(), .cc = args.cc, .cwd = args.cwd};
  if (!args.launcher.empty()) options.launcher = Launcher::named(args.launcher);
  // Beyond what milliseconds in a long can hold (about 292,000 years), there is no limit.
  if (args.timeout_seconds > 0 && args.timeout_seconds < 9e15) {
    options.timeout = std::chrono::milliseconds(static_cast<long>(args.timeout_seconds * 1000));
  }
  return options;
}

// --lib NAME is -lNAME; a name with a '/' or a '.' (libfoo.a, ./libbar.so) is a file.
std::string library_argument(const std::string& lib) {
  if (lib.find_first_of("/.") != std::string::npos) return lib;
  return "-l" + lib;
}

// Compiler warnings are worth seeing even when the build worked.
void show_tool_output(const RunResult& result) {
  if (!result.output.empty()) std::cerr << result.output;
}

void add_build(CLI::App& cc, const char* name, const char* description, BuildFn build,
               int* status) {
  auto args = std::make_shared<CcArgs>();
  CLI::App* sub = cc.add_subcommand(name, description);
  sub->add_option("-o,--output", args->output, "The file to write")->required();
  sub->add_option("--cc", args->cc, "The compiler (default: $CXX, $CC, g++, gcc, clang++, ...)");
  sub->add_option("--launcher", args->launcher, "Run the compiler through this launcher")
      ->check(CLI::IsMember(enum_names(kLaunchers)));
  sub->add_option("--cwd", args->cwd, "Run the compiler in this directory");
  sub->add_option("--timeout", args->timeout_seconds, "Kill the compiler after this many seconds")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--lib", args->libs,
                  "A library to link after the inputs: NAME (-lNAME) or a file (repeatable)");
  sub->add_option("inputs", args->inputs, "Sources and objects; compiler options go after --")
      ->required();
  sub->footer(
      "Options after -- go to the compiler before the inputs (as tvm.support 0.27: -x c++ applies "
      "to the files after it); libraries to link go after the inputs with --lib.");
  sub->callback([args, build, status] {
    std::vector<std::filesystem::path> inputs(args->inputs.begin(), args->inputs.end());
    for (const std::string& lib : args->libs) inputs.emplace_back(library_argument(lib));
    show_tool_output(build(args->output, inputs, to_options(*args)));
    *status = kExitOk;
  });
}

void add_static(CLI::App& cc, int* status) {
  auto output = std::make_shared<std::string>();
  auto ar = std::make_shared<std::string>();
  auto inputs = std::make_shared<std::vector<std::string>>();
  CLI::App* sub =
      cc.add_subcommand("static", "Archive objects (or .tar bundles of them) with ar -crs");
  sub->add_option("-o,--output", *output, "The static library to write")->required();
  sub->add_option("--ar", *ar, "The archiver (default: ar)");
  sub->add_option("inputs", *inputs, "Objects, or .tar bundles of objects")->required();
  sub->callback([=] {
    require_no_passthrough("cc static");
    std::vector<std::filesystem::path> paths(inputs->begin(), inputs->end());
    show_tool_output(cc::create_staticlib(*output, paths, {.ar = *ar}));
    *status = kExitOk;
  });
}

void add_triple(CLI::App& cc, int* status) {
  auto compiler = std::make_shared<std::string>();
  CLI::App* sub =
      cc.add_subcommand("triple", "Print the target triple of a compiler (-dumpmachine)");
  sub->add_option("--cc", *compiler, "The compiler (default: as for kiln cc shared)");
  sub->footer("Options after -- that change the target (--target=..., -m32) are passed on.");
  sub->callback([=] {
    std::string name = !compiler->empty() ? *compiler : cc::get_cc().value_or("");
    if (name.empty()) throw ToolNotFound("cc", "no C/C++ compiler found: pass --cc");
    std::optional<std::string> triple = cc::get_target_by_dump_machine(name, passthrough())();
    if (!triple) {
      std::string message = "cannot tell the target triple of '" + name + "' (-dumpmachine failed)";
      if (!which(name)) throw ToolNotFound(name, message);
      throw UnexpectedOutput(message);  // it ran, but failed or printed nothing
    }
    std::cout << *triple << "\n";
    *status = kExitOk;
  });
}

void add_symbols(CLI::App& cc, int* status) {
  auto library = std::make_shared<std::string>();
  auto nm = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* sub =
      cc.add_subcommand("symbols", "Print global defined symbols and their sections (nm -gU)");
  sub->add_option("library", *library, "A library or object file")->required();
  sub->add_option("--nm", *nm, "The nm to use (default: nm)");
  sub->add_flag("--json", *json, "Print one JSON object: symbol -> section letter");
  sub->callback([=] {
    require_no_passthrough("cc symbols");
    std::map<std::string, std::string> symbols = cc::get_global_symbol_section_map(*library, *nm);
    if (*json) {
      std::cout << json_text(nlohmann::json(symbols), 2) << "\n";
    } else {
      for (const auto& [symbol, section] : symbols) std::cout << section << " " << symbol << "\n";
    }
    *status = kExitOk;
  });
}

}  // namespace

void add_cc(CLI::App& app, int* status) {
  CLI::App* cc = app.add_subcommand("cc", "Drive host and cross C/C++ compilers");
  cc->require_subcommand(1);
  add_build(*cc, "shared", "Link a shared library: CC -shared -fPIC -o OUT OPTIONS... INPUTS...",
            cc::create_shared, status);
  add_build(*cc, "exe", "Link an executable: CC -o OUT OPTIONS... INPUTS...", cc::create_executable,
            status);
  add_build(*cc, "object", "Compile one object: CC -c -o OUT OPTIONS... INPUTS...",
            cc::create_object, status);
  add_static(*cc, status);
  add_triple(*cc, status);
  add_symbols(*cc, status);
}

}  // namespace kiln::cli
