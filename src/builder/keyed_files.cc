#include "keyed_files.h"

#include "internal/files.h"
#include "kiln/direct_cache.h"
#include "kiln/error.h"

namespace kiln::build::detail {

namespace fs = std::filesystem;

KeyedFiles::KeyedFiles(const std::vector<fs::path>& sources, const std::vector<fs::path>& inputs) {
  for (const fs::path& source : sources) files_.push_back({.path = source, .source = true});
  for (const fs::path& input : inputs) files_.push_back({.path = input});
}

void KeyedFiles::read(File& file) {
  if (file.hash) return;
  std::string content = internal::read_file(file.path);
  file.hash = content_key(content);
  if (file.source) file.content = std::move(content);
}

const std::string& KeyedFiles::content(const fs::path& source) {
  for (File& file : files_) {
    if (file.source && file.path == source) {
      read(file);
      return *file.content;
    }
  }
  throw InvalidArgument("not a source of the job: " + source.string());
}

std::vector<std::pair<fs::path, std::string>> KeyedFiles::hashes() {
  std::vector<std::pair<fs::path, std::string>> all;
  all.reserve(files_.size());
  for (File& file : files_) {
    read(file);
    all.emplace_back(file.path, *file.hash);
  }
  return all;
}

}  // namespace kiln::build::detail
