// kiln tar create -o OUT FILES... | kiln tar extract ARCHIVE -C DIR [--max-bytes N]
// [--max-members N]: tar archives in-process, with safe, bounded extraction (see kiln/tar.h).
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "kiln/tar.h"

namespace kiln::cli {
namespace {

void add_create(CLI::App& tar_app, int* status) {
  struct Args {
    std::string output;
    std::vector<std::string> files;
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = tar_app.add_subcommand(
      "create", "Write a gzip tar whose members are the files' base names (duplicates refused)");
  sub->add_option("-o,--output", args->output, "The archive to write")->required();
  sub->add_option("files", args->files, "The files to put in it")->required();
  sub->callback([args, status] {
    require_no_passthrough("tar create");
    std::vector<std::filesystem::path> files(args->files.begin(), args->files.end());
    tar(args->output, files);
    *status = kExitOk;
  });
}

void add_extract(CLI::App& tar_app, int* status) {
  struct Args {
    std::string archive;
    std::string directory;
    UntarOptions limits;
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = tar_app.add_subcommand(
      "extract",
      "Extract a gzip or plain tar into a directory, refusing members that would escape it");
  sub->add_option("archive", args->archive, "The archive to read")->required();
  sub->add_option("-C,--directory", args->directory, "Where to extract (created if missing)")
      ->required();
  sub->add_option("--max-bytes", args->limits.max_bytes,
                  "Refuse an archive whose files hold more bytes than this in all (default 8G; "
                  "suffixes k, M, G, T count in 1024s); nothing of it is kept")
      ->transform(CLI::AsSizeValue(false));
  sub->add_option("--max-members", args->limits.max_members,
                  "Refuse an archive with more members than this (default 1000000); nothing of "
                  "it is kept");
  sub->callback([args, status] {
    require_no_passthrough("tar extract");
    untar(args->archive, args->directory, args->limits);
    *status = kExitOk;
  });
}

}  // namespace

void add_tar(CLI::App& app, int* status) {
  CLI::App* sub = app.add_subcommand("tar", "Create or safely extract tar archives (in-process)");
  sub->require_subcommand(1);
  add_create(*sub, status);
  add_extract(*sub, status);
}

}  // namespace kiln::cli
