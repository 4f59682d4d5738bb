// kiln: the command-line tool. Parses the command line with CLI11, runs one subcommand, and is
// the only place that prints errors and chooses exit statuses (0 ok, 1 failed, 2 bad usage).
#include <signal.h>

#include <iostream>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "kiln/error.h"
#include "kiln/pool.h"
#include "kiln/process.h"
#include "kiln/text.h"
#include "kiln_build_info.h"

int main(int argc, char** argv) {
  kiln::pool::serve_if_worker(argc, argv);  // `kiln build` re-executes kiln as its workers
  namespace cli = kiln::cli;
  CLI::App app("kiln: toolchain support for machine-learning compilers", "kiln");
  app.set_version_flag(
      "--version", std::string("kiln ") + KILN_VERSION_STRING + " (git " + KILN_GIT_COMMIT + ")");
  app.require_subcommand(1);
  int status = cli::kExitOk;
  cli::add_describe(app, &status);
  cli::add_tar(app, &status);
  cli::add_cc(app, &status);
  cli::add_clang(app, &status);
  cli::add_cuda(app, &status);
  cli::add_cache(app, &status);
  cli::add_rocm(app, &status);
  cli::add_ndk(app, &status);
  cli::add_emcc(app, &status);
  cli::add_doctor(app, &status);
  cli::add_build(app, &status);
  cli::add_settings(app, &status);
  cli::add_templates(app, &status);
  auto fail = [](const std::exception& e, int exit_status) {
    std::cerr << "kiln: error: " << kiln::printable_lines(e.what()) << "\n";
    return exit_status;
  };
  // A reader that went away (`kiln build | head -1`) is not a reason to die halfway: writes to a
  // closed stdout fail instead, and output stops (the tools kiln starts get the default back).
  (void)::signal(SIGPIPE, SIG_IGN);
  try {
    kiln::guard_children();  // while kiln has one thread
    cli::split_passthrough(argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --help-all, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "kiln: error: " << kiln::printable_lines(e.what())
              << "\nRun 'kiln --help' for usage.\n";
    return cli::kExitUsage;
  } catch (const kiln::InvalidArgument& e) {
    return fail(e, cli::kExitUsage);
  } catch (const std::exception& e) {  // kiln::Error and anything unexpected
    return fail(e, cli::kExitFailed);
  }
  return status;
}
