// kiln: the command-line tool. Parses the command line with CLI11, runs one subcommand, and is
// the only place that prints errors and chooses exit statuses (0 ok, 1 failed, 2 bad usage).
#include <iostream>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "kiln/error.h"
#include "kiln_build_info.h"

int main(int argc, char** argv) {
  namespace cli = kiln::cli;
  CLI::App app("kiln: toolchain support for machine-learning compilers", "kiln");
  app.set_version_flag(
      "--version", std::string("kiln ") + KILN_VERSION_STRING + " (git " + KILN_GIT_COMMIT + ")");
  app.require_subcommand(1);
  int status = cli::kExitOk;
  cli::add_describe(app, &status);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "kiln: error: " << e.what() << "\nRun 'kiln --help' for usage.\n";
    return cli::kExitUsage;
  } catch (const kiln::InvalidArgument& e) {
    std::cerr << "kiln: error: " << e.what() << "\n";
    return cli::kExitUsage;
  } catch (const kiln::Error& e) {
    std::cerr << "kiln: error: " << e.what() << "\n";
    return cli::kExitFailed;
  } catch (const std::exception& e) {
    std::cerr << "kiln: error: " << e.what() << "\n";
    return cli::kExitFailed;
  }
  return status;
}
