#include "manifest_rules.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/cuda.h"

namespace kiln::build::detail {

const KeyRule* rule_of(std::string_view key) {
  for (const KeyRule& rule : kJobKeys) {
    if (rule.key == key) return &rule;
  }
  return nullptr;
}

std::span<const Language> languages_of_kind(JobKind kind) {
  static constexpr Language kHost[] = {Language::c, Language::cxx, Language::assembly,
                                       Language::cuda};
  static constexpr Language kCOrCxx[] = {Language::c, Language::cxx};
  static constexpr Language kCuda[] = {Language::cuda};
  static constexpr Language kRocm[] = {Language::opencl, Language::llvm_ir, Language::assembly};
  switch (kind) {
    case JobKind::object:
    case JobKind::shared:
    case JobKind::executable:
      return kHost;
    case JobKind::llvm_ir:
    case JobKind::wasm:
      return kCOrCxx;
    case JobKind::cuda:
      return kCuda;
    case JobKind::rocm_code_object:
      return kRocm;
    default:
      return {};
  }
}

KindSet input_kinds_of(JobKind kind) {
  switch (kind) {
    case JobKind::shared:
    case JobKind::executable:
      return bit(JobKind::object) | bit(JobKind::static_library) | bit(JobKind::shared);
    case JobKind::wasm:
      return bit(JobKind::object) | bit(JobKind::static_library);
    case JobKind::static_library:
      return bit(JobKind::object) | bit(JobKind::tar);
    case JobKind::tar:
      return kAllKinds;
    default:
      return 0;
  }
}

std::string in_words(const std::vector<std::string>& words, std::string_view conjunction) {
  if (words.size() <= 1) return words.empty() ? "" : words[0];
  std::span<const std::string> head(words.data(), words.size() - 1);
  return fmt::format("{} {} {}", fmt::join(head, ", "), conjunction, words.back());
}

std::string kinds_in_words(KindSet set, std::string_view conjunction) {
  std::vector<std::string> names;
  for (const auto& [kind, name] : kJobKindNames) {
    if (contains(set, kind)) names.emplace_back(name);
  }
  return in_words(names, conjunction);
}

std::string languages_in_words(std::span<const Language> languages, std::string_view conjunction) {
  std::vector<std::string> names;
  for (Language language : languages) names.emplace_back(language_name(language));
  return in_words(names, conjunction);
}

bool is_valid_name(std::string_view name) {
  if (name.empty() || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '+' || c == '-';
  });
}

bool is_rocm_arch(std::string_view arch) {
  if (!arch.starts_with("gfx") || arch.size() == 3) return false;
  return std::all_of(arch.begin() + 3, arch.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z'); });
}

bool is_cuda_arch(const std::string& arch) {
  try {
    (void)cuda::compute_version_of_arch(arch);
    return true;
  } catch (const InvalidArgument&) {
    return false;
  }
}

}  // namespace kiln::build::detail
