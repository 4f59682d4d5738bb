// The public face of the manifest (kiln/manifest.h): names of kinds, languages and toolchains
// (from their tables), output names, and parse_manifest / parse_manifest_text over the Parser
// (manifest_parser.h).
#include "kiln/manifest.h"

#include <system_error>

#include <fmt/format.h>

#include "internal/files.h"
#include "manifest_parser.h"

namespace kiln::build {

namespace fs = std::filesystem;

std::string_view kind_name(JobKind kind) { return enum_name(kJobKindNames, kind); }

std::optional<JobKind> kind_from_name(std::string_view name) {
  return enum_value(kJobKindNames, name);
}

std::string_view language_name(Language language) { return enum_name(kLanguageNames, language); }

std::optional<Language> language_from_name(std::string_view name) {
  return enum_value(kLanguageNames, name);
}

std::optional<Language> language_of(const fs::path& source) {
  static constexpr std::pair<std::string_view, Language> kExtensions[] = {
      {".c", Language::c},        {".cc", Language::cxx},     {".cpp", Language::cxx},
      {".cxx", Language::cxx},    {".c++", Language::cxx},    {".C", Language::cxx},
      {".cu", Language::cuda},    {".ll", Language::llvm_ir}, {".s", Language::assembly},
      {".S", Language::assembly}, {".cl", Language::opencl}};
  std::string extension = source.extension().string();
  for (const auto& [suffix, language] : kExtensions) {
    if (suffix == extension) return language;
  }
  return std::nullopt;
}

std::string_view toolchain_name(Toolchain toolchain) {
  return enum_name(kToolchainNames, toolchain);
}

std::optional<Toolchain> toolchain_from_name(std::string_view name) {
  return enum_value(kToolchainNames, name);
}

fs::path Job::output_name() const {
  // Appended to the name, never built from a temporary ("." + std::string(...)): GCC 12 at -O2
  // warns (-Wrestrict) about the inlined copy that makes.
  std::string_view extension;
  switch (kind) {
    case JobKind::object:
      extension = ".o";
      break;
    case JobKind::shared:
      extension = ".so";
      break;
    case JobKind::executable:
      break;
    case JobKind::static_library:
      extension = ".a";
      break;
    case JobKind::llvm_ir:
      extension = ".ll";
      break;
    case JobKind::cuda:
      return fmt::format("{}.{}", name, cuda::format_name(format));
    case JobKind::rocm_code_object:
      extension = ".hsaco";
      break;
    case JobKind::wasm:
      extension = ".wasm";
      break;
    case JobKind::tar:
      extension = ".tar";
      break;
  }
  std::string file = name;
  file += extension;
  return file;
}

std::optional<std::size_t> Manifest::index_of(std::string_view name) const {
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].name == name) return i;
  }
  return std::nullopt;
}

Manifest parse_manifest_text(std::string_view json, const fs::path& directory,
                             std::string_view origin) {
  fs::path absolute = fs::absolute(directory).lexically_normal();
  return detail::Parser(origin, absolute).parse(json);
}

Manifest parse_manifest(const fs::path& file) {
  std::error_code ec;
  fs::file_status status = fs::status(file, ec);
  if (status.type() == fs::file_type::not_found) {
    throw FileNotFound(fmt::format("manifest {}: no such file", file.string()));
  }
  if (ec) throw SystemError(fmt::format("stat manifest {}", file.string()), ec.value());
  if (!fs::is_regular_file(status)) {
    throw ManifestError(fmt::format("manifest {}: not a regular file", file.string()));
  }
  std::string text = internal::read_file(file, "cannot read manifest");
  fs::path directory = fs::absolute(file).lexically_normal().parent_path();
  Manifest manifest = parse_manifest_text(text, directory, file.string());
  manifest.file = file;
  return manifest;
}

}  // namespace kiln::build
