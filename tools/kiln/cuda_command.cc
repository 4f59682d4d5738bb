// kiln cuda compile|info.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "kiln/cuda.h"
#include "kiln/cuda_messages.h"
#include "kiln/error.h"
#include "kiln/text.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

struct CompileArgs {
  std::string file;
  std::string backend = "nvrtc";
  std::string format;
  std::string arch;
  std::string output;
};

std::string read_source(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InvalidArgument(fmt::format("cannot read {}: {}", path, std::strerror(EISDIR)));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidArgument(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The compile, its failure told briefly and in the command line's words (the library's message
// starts with the whole source, as the seed's does).
cuda::CompileResult compile_file(const std::string& code, const cuda::CompileOptions& options) {
  if (options.backend == cuda::Backend::nvrtc && options.format == cuda::Format::fatbin &&
      !cuda::uses_nvshmem(code)) {  // NVSHMEM code is made a cubin whatever the format
    throw InvalidArgument(cuda::nvrtc_fatbin_refusal(cuda::Audience::command_line));
  }
  try {
    return cuda::compile(code, options);
  } catch (const ToolFailed& e) {
    throw cuda::brief_failure(e, cuda::Audience::command_line);
  }
}

void compile(const CompileArgs& args) {
  cuda::Backend backend = cuda::backend_from_name(args.backend);
  std::optional<cuda::Format> format;
  if (!args.format.empty()) format = cuda::format_from_name(args.format);
  std::string code = read_source(args.file);
  cuda::CompileOptions options{.format = format,
                               .arch = args.arch,
                               .options = passthrough(),
                               .source_path = args.file,
                               .backend = backend};
  cuda::Format chosen = cuda::format_of(code, options);
  options.output = args.output.empty()
                       ? fs::path(args.file).filename().replace_extension(
                             std::string(".") + std::string(cuda::format_name(chosen)))
                       : fs::path(args.output);
  const fs::path& output = options.output;
  cuda::CompileResult result = compile_file(code, options);
  if (!result.warning.empty()) std::cerr << "kiln: warning: " << result.warning << "\n";
  // The compiler's warnings and ptxas' resource lines, as a compiler run by hand shows them.
  if (!result.log.empty()) {
    std::cerr << result.log << (result.log.ends_with('\n') ? "" : "\n") << std::flush;
  }
  std::string notes(cuda::backend_name(backend));
  if (!args.arch.empty()) notes += ", " + args.arch;
  // From kiln's kernel cache: no compiler ran.
  if (result.cached) notes += result.cached_remotely ? ", from the remote cache" : ", cached";
  if (result.programs > 1) notes += fmt::format(", {} programs at once", result.programs);
  std::cout << fmt::format("{}: {} bytes of {} ({})\n", output.string(), result.bytes.size(),
                           cuda::format_name(chosen), notes);
}

// One line of `kiln cuda info`: a value, or why there is none.
template <typename Fn>
nlohmann::json probe(Fn&& fn) {
  try {
    return fn();
  } catch (const Error& e) {
    return {{"unavailable", e.what()}};
  }
}

nlohmann::json info() {
  nlohmann::json j;
  j["cuda_path"] = probe([] { return nlohmann::json(cuda::find_cuda_path().string()); });
  j["cuda_version"] = probe([] { return nlohmann::json(cuda::get_cuda_version().to_string()); });
  j["nvrtc_version"] = probe([] {
    auto [major, minor] = cuda::nvrtc_version();
    return nlohmann::json(fmt::format("{}.{}", major, minor));
  });
  j["nvrtc_architectures"] = probe([] {
    return nlohmann::json(cuda::nvrtc_targets());  // sm_90a, sm_100f, ... too
  });
  j["libdevice"] = probe([] { return nlohmann::json(cuda::find_libdevice_path(80).string()); });
  j["nvshmem"] = probe([] {
    cuda::NvshmemPaths paths = cuda::find_nvshmem_paths();
    return nlohmann::json{{"include", paths.include_dir.string()}, {"lib", paths.lib_dir.string()}};
  });
  std::string why;
  std::optional<std::string> device = cuda::device_compute_version(&why);
  j["device_compute_capability"] =
      device ? nlohmann::json(*device) : nlohmann::json{{"unavailable", why}};
  return j;
}

std::string text_of(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("unavailable")) {
    return "unavailable: " + value["unavailable"].get<std::string>();
  }
  if (value.is_array()) {
    std::string joined;
    for (const auto& item : value) joined += (joined.empty() ? "" : " ") + text_of(item);
    return joined;
  }
  if (value.is_object()) {
    std::string joined;
    for (const auto& [key, item] : value.items()) {
      joined += (joined.empty() ? "" : ", ") + key + " " + text_of(item);
    }
    return joined;
  }
  return json_text(value);
}

}  // namespace

void add_cuda(CLI::App& app, int* status) {
  CLI::App* cuda = app.add_subcommand("cuda", "CUDA: compile kernels with NVRTC or nvcc");
  cuda->require_subcommand(1);

  auto args = std::make_shared<CompileArgs>();
  CLI::App* compile_cmd =
      cuda->add_subcommand("compile", "Compile a .cu file to PTX, a cubin or a fatbin");
  compile_cmd->add_option("file", args->file, "The CUDA source")
      ->required()
      ->check(CLI::ExistingFile);
  compile_cmd->add_option("--backend", args->backend, "nvrtc (default) or nvcc")
      ->check(CLI::IsMember(enum_names(cuda::kBackendNames)));
  compile_cmd
      ->add_option("--format", args->format,
                   "ptx, cubin or fatbin (nvcc only); default: "
                   "cubin with NVRTC, ptx with nvcc")
      ->check(CLI::IsMember(enum_names(cuda::kFormatNames)));
  compile_cmd->add_option("--arch", args->arch, "sm_80, sm_90a, ...; default: the GPU's");
  compile_cmd->add_option("-o,--output", args->output,
                          "Where to write it (default: FILE's name "
                          "with the format's extension, here)");
  compile_cmd->footer("Options after -- go to the compiler.");
  compile_cmd->callback([args, status] {
    compile(*args);
    *status = kExitOk;
  });

  auto json = std::make_shared<bool>(false);
  CLI::App* info_cmd = cuda->add_subcommand(
      "info", "The CUDA toolkit, NVRTC, libdevice, NVSHMEM and GPU kiln finds, or why not");
  info_cmd->add_flag("--json", *json, "Print one JSON object");
  info_cmd->callback([json, status] {
    require_no_passthrough("cuda info");
    nlohmann::json j = info();
    if (*json) {
      std::cout << json_text(j, 2) << "\n";
    } else {
      for (const auto& [key, value] : j.items()) {
        std::cout << fmt::format("{:<26} {}\n", key, text_of(value));
      }
    }
    *status = kExitOk;
  });
}

}  // namespace kiln::cli
