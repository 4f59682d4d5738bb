// merged_ptx() (ptx_merge.h).
#include "ptx_merge.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "kiln/text.h"

namespace kiln::cuda::internal {
namespace {

// The header's directives end at the end of their line; every other statement at module scope
// ends with `;` or with the `}` of a function's body.
bool header_directive(std::string_view statement) {
  return statement.starts_with(".version") || statement.starts_with(".target") ||
         statement.starts_with(".address_size");
}

// A PTX module as its header lines and its other statements, comments left out.
struct Module {
  std::vector<std::string> header;
  std::vector<std::string> statements;
};

class Reader {
 public:
  explicit Reader(std::string_view ptx) : ptx_(ptx) {}

  std::optional<Module> read() {
    Module module;
    while (skip_space_and_comments()) {
      size_t begin = at_;
      if (header_directive(ptx_.substr(at_))) {
        at_ = std::min(ptx_.find('\n', at_), ptx_.size());
        module.header.emplace_back(trimmed(ptx_.substr(begin, at_ - begin)));
        continue;
      }
      if (!statement()) return std::nullopt;
      std::string_view text = ptx_.substr(begin, at_ - begin);
      if (text.starts_with(".file") || text.starts_with(".section")) return std::nullopt;
      module.statements.emplace_back(text);
    }
    if (!ok_) return std::nullopt;
    return module;
  }

 private:
  // Moves to the next statement; false at the end (or on an unclosed comment: ok_ is false).
  bool skip_space_and_comments() {
    while (at_ < ptx_.size()) {
      char c = ptx_[at_];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        ++at_;
      } else if (ptx_.substr(at_, 2) == "//") {
        at_ = std::min(ptx_.find('\n', at_), ptx_.size());
      } else if (ptx_.substr(at_, 2) == "/*") {
        size_t end = ptx_.find("*/", at_ + 2);
        if (end == std::string_view::npos) return ok_ = false;
        at_ = end + 2;
      } else {
        return true;
      }
    }
    return false;
  }

  // Reads one statement: up to `;` outside braces, or a function's closing `}`.
  bool statement() {
    int depth = 0;
    while (at_ < ptx_.size()) {
      char c = ptx_[at_];
      if (c == '"') {
        size_t end = ptx_.find('"', at_ + 1);
        if (end == std::string_view::npos) return false;
        at_ = end + 1;
        continue;
      }
      if (ptx_.substr(at_, 2) == "//") {
        at_ = std::min(ptx_.find('\n', at_), ptx_.size());
        continue;
      }
      if (ptx_.substr(at_, 2) == "/*") {
        size_t end = ptx_.find("*/", at_ + 2);
        if (end == std::string_view::npos) return false;
        at_ = end + 2;
        continue;
      }
      ++at_;
      if (c == '{') ++depth;
      if (c == '}' && --depth < 0) return false;
      if (c == ';' && depth == 0) return true;
      if (c == '}' && depth == 0 && !initializer_follows()) return true;
    }
    return false;
  }

  // Whether a `;` comes next, after a `}`: it closed an initializer ({1, 2};), not a body.
  bool initializer_follows() const {
    size_t next = ptx_.find_first_not_of(" \t\r\n", at_);
    return next != std::string_view::npos && ptx_[next] == ';';
  }

  std::string_view ptx_;
  size_t at_ = 0;
  bool ok_ = true;
};

bool name_char(char c) {
  return c == '_' || c == '$' || c == '%' || std::isalnum(static_cast<unsigned char>(c)) != 0;
}

// The name a statement at module scope defines or declares: a function's (after .func or .entry
// and the return parameters in parentheses), or a variable's (the last word before its
// dimensions, initializer or `;`); "" for anything else.
std::string_view declared_name(std::string_view statement) {
  auto word_at = [&](size_t at) {
    size_t end = at;
    while (end < statement.size() && name_char(statement[end])) ++end;
    return statement.substr(at, end - at);
  };
  auto skip_space = [&](size_t at) {
    while (at < statement.size() && std::isspace(static_cast<unsigned char>(statement[at]))) ++at;
    return at;
  };
  size_t head_end =
      std::min({statement.find('{'), statement.find('='), statement.find(';'), statement.size()});
  std::string_view head = statement.substr(0, head_end);
  for (std::string_view kind : {".func", ".entry"}) {
    size_t at = head.find(kind);
    if (at == std::string_view::npos) continue;
    at = skip_space(at + kind.size());
    if (at < statement.size() && statement[at] == '(') {  // the return parameters
      size_t close = statement.find(')', at);
      if (close == std::string_view::npos) return {};
      at = skip_space(close + 1);
    }
    return word_at(at);
  }
  size_t end = std::min(head.find('['), head.size());
  while (end > 0 && std::isspace(static_cast<unsigned char>(head[end - 1]))) --end;
  size_t begin = end;
  while (begin > 0 && name_char(head[begin - 1])) --begin;
  if (begin == 0 || head[begin - 1] == '.') return {};  // a directive, not a name
  return head.substr(begin, end - begin);
}

bool program_dependent(std::string_view name) {
  return name.find("_INTERNAL_") != std::string_view::npos ||
         name.find('$') != std::string_view::npos || name.starts_with("__unnamed_");
}

}  // namespace

std::string program_dependent_name(std::string_view ptx) {
  std::optional<Module> module = Reader(ptx).read();
  if (!module) return {};
  for (const std::string& statement : module->statements) {
    std::string_view name = declared_name(statement);
    if (program_dependent(name)) return std::string(name);
  }
  return {};
}

std::optional<std::string> merged_ptx(const std::vector<std::string>& modules) {
  std::vector<Module> read;
  for (const std::string& ptx : modules) {
    std::optional<Module> module = Reader(ptx).read();
    if (!module || (!read.empty() && module->header != read.front().header)) return std::nullopt;
    read.push_back(std::move(*module));
  }
  if (read.empty() || read.front().header.empty()) return std::nullopt;
  std::string merged;
  for (const std::string& line : read.front().header) merged += line + "\n";
  std::set<std::string_view> seen;
  for (const Module& module : read) {
    for (const std::string& statement : module.statements) {
      if (seen.insert(statement).second) merged += "\n" + statement + "\n";
    }
  }
  return merged;
}

std::string ptx_compiler_release(std::string_view ptx) {
  constexpr std::string_view kRelease = "Cuda compilation tools, release ";
  size_t at = ptx.find(kRelease);
  size_t line = ptx.rfind('\n', at);
  if (at == std::string_view::npos || ptx.substr(line + 1, at - line - 1) != "// ") return {};
  size_t end = ptx.find('\n', at);
  return std::string(ptx.substr(at, (end == std::string_view::npos ? ptx.size() : end) - at));
}

}  // namespace kiln::cuda::internal
