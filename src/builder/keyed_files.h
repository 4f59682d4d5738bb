// The files a job's key covers, its sources and inputs, each read once before the compile: the
// key (key_text), the CUDA recipe's code and DirectCache's check after the compile all take what
// was read here, so that no two of them can see two different contents of one file.
//
//   KeyedFiles files(job.sources, inputs);
//   std::string code = files.content(job.sources.front());   // read now, and only now
//   DirectCache direct(cache, key, files.hashes());          // not read again
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::build::detail {

class KeyedFiles {
 public:
  KeyedFiles(const std::vector<std::filesystem::path>& sources,
             const std::vector<std::filesystem::path>& inputs);

  // A source's content, read on its first use (throws as internal::read_file: FileNotFound
  // naming it). Kept for the job's life; an input's content is not (only its hash).
  const std::string& content(const std::filesystem::path& source);
  // Every source's and input's path with its content hash (kiln::content_key), sources first,
  // each in the order given; reads what was not read yet.
  std::vector<std::pair<std::filesystem::path, std::string>> hashes();

 private:
  struct File {
    std::filesystem::path path{};
    bool source = false;
    std::optional<std::string> content{};
    std::optional<std::string> hash{};
  };
  void read(File& file);

  std::vector<File> files_;
};

}  // namespace kiln::build::detail
