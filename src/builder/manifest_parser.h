// The manifest parser: JSON text to checked jobs (kiln/manifest.h). One Parser reads one manifest.
//
// Parsing makes two passes over "jobs": the first only notes each job's name and kind, so that a
// job may name a later one in "inputs" or "deps"; the second checks every job fully, in manifest
// order, so the error reported is the first problem in the file. Cycles, which only the whole
// graph shows, are looked for last. The work is split by phase: manifest_parser.cc reads JSON
// values and the top level, manifest_job.cc one job, manifest_graph.cc the dependency graph.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/manifest.h"

namespace kiln::build::detail {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;  // keeps keys in the order written, for messages

// "a string", "an array", ... for "must be X, not Y".
std::string a_type(const Json& value);

// The value of a manifest's "defaults".
struct Defaults {
  std::optional<double> timeout;  // "defaults"' timeout, when given
  std::vector<std::string> options;
  std::map<std::string, std::string, std::less<>> strings;  // cc, launcher, ... when given
};

class Parser {
 public:
  Parser(std::string_view origin, fs::path directory)
      : origin_(origin), directory_(std::move(directory)) {}

  Manifest parse(std::string_view text);

 private:
  [[noreturn]] void fail(std::string_view message) const {
    throw ManifestError(fmt::format("manifest {}: {}", origin_, message));
  }
  static std::string at(std::string_view where, std::string_view key) {
    return fmt::format("{}{}key \"{}\"", where, where.empty() ? "" : ": ", key);
  }

  Json parse_json(std::string_view text) const;
  void check_keys(const Json& object, std::string_view where,
                  std::span<const std::string_view> known) const;
  std::optional<std::string> string_at(const Json& object, std::string_view key,
                                       std::string_view where) const;
  std::optional<std::vector<std::string>> strings_at(const Json& object, std::string_view key,
                                                     std::string_view where) const;
  std::optional<double> timeout_at(const Json& object, std::string_view where) const;
  void check_setting(std::string_view key, const std::string& value, JobKind kind,
                     std::string_view where) const;
  fs::path existing_file(const std::string& relative, const std::string& where) const;

  void read_defaults(const Json& root);
  void note_names(const Json& jobs);
  Job read_job(const Json& entry, std::size_t index);
  std::string read_name(const Json& entry, std::size_t index) const;
  JobKind read_kind(const Json& entry, const std::string& where) const;
  void check_job_keys(const Json& entry, JobKind kind, const std::string& where) const;
  void read_sources(const Json& entry, Job& job, const std::string& where) const;
  void read_language(const Json& entry, Job& job, const std::string& where) const;
  void read_inputs(const Json& entry, Job& job, const std::string& where) const;
  void read_deps(const Json& entry, Job& job, const std::string& where) const;
  void read_settings(const Json& entry, Job& job, const std::string& where) const;
  std::size_t dependency(const std::string& name, const Job& job, const std::string& where) const;
  void check_output(const Job& job, std::size_t index, const std::string& where);
  std::vector<std::size_t> order(const std::vector<Job>& jobs) const;
  void check_cycles(const std::vector<Job>& jobs,
                    const std::vector<std::vector<std::size_t>>& edges) const;

  std::string origin_;
  fs::path directory_;
  Defaults defaults_;
  std::map<std::string, std::size_t, std::less<>> first_index_;  // name -> its first job
  std::vector<std::optional<JobKind>> kinds_;                    // by index, when valid
  std::map<fs::path, std::size_t> outputs_;                      // output name -> job
};

}  // namespace kiln::build::detail
