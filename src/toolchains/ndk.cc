#include "kiln/ndk.h"

#include "internal/files.h"
#include "kiln/cc.h"
#include "kiln/error.h"
#include "kiln/tar.h"
#include "kiln/temp_directory.h"

namespace kiln::ndk {

namespace fs = std::filesystem;

fs::path compiler() {
  const char* cc = std::getenv("TVM_NDK_CC");  // NOLINT(concurrency-mt-unsafe): read-only use
  if (cc == nullptr || *cc == '\0') {
    throw ToolNotFound("TVM_NDK_CC",
                       "Require environment variable TVM_NDK_CC to be the NDK standalone compiler");
  }
  return cc;
}

RunResult create_shared(const fs::path& output, const std::vector<fs::path>& objects,
                        const std::optional<std::vector<std::string>>& options) {
  std::vector<std::string> argv = {compiler().string(), "-o", output.string()};
  for (const fs::path& object : objects) argv.push_back(object.string());
  std::vector<std::string> flags =
      options.value_or(std::vector<std::string>{"-shared", "-fPIC", "-lm"});
  argv.insert(argv.end(), flags.begin(), flags.end());
  return check("Compilation error:", {.argv = argv});
}

RunResult create_staticlib(const fs::path& output, const std::vector<fs::path>& inputs) {
  fs::path tools = compiler().parent_path();
  TempDirectory temp;
  fs::path library = temp / ("lib" + output.filename().string());
  std::vector<std::string> ar = {(tools / "llvm-ar").string(), "qcs", library.string()};
  for (const fs::path& object : normalize_file_list_by_unpacking_tars(temp, inputs)) {
    ar.push_back(object.string());
  }
  check("AR error:", {.argv = ar});
  RunResult ranlib =
      check("Ranlib error:", {.argv = {(tools / "llvm-ranlib").string(), library.string()}});
  internal::move_into_place(library, output);
  return ranlib;
}

std::map<std::string, std::string> get_global_symbol_section_map(const fs::path& path,
                                                                 const std::string& nm) {
  return cc::get_global_symbol_section_map(
      path, nm.empty() ? (compiler().parent_path() / "llvm-nm").string() : nm);
}

std::optional<std::string> get_target_triple() {
  return cc::get_target_by_dump_machine(compiler().string())();
}

}  // namespace kiln::ndk
