// hoistable_includes() and the small #if evaluator it needs (nvrtc_prefix.h).
#include "nvrtc_prefix.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "kiln/text.h"

namespace kiln::cuda::internal {
namespace {

using Value = std::optional<long>;  // std::nullopt: undecided

// A recursive-descent reader of #if expressions: ||, &&, !, comparisons, defined, integers,
// identifiers and parentheses. Anything else makes the whole expression undecided.
class Condition {
 public:
  Condition(std::string_view text, int cuda_arch) : text_(text), cuda_arch_(cuda_arch) {}

  Value evaluate() {
    Value value = disjunction();
    skip_space();
    return broken_ || at_ != text_.size() ? std::nullopt : value;
  }

 private:
  Value disjunction() {
    Value left = conjunction();
    while (take("||")) {
      Value right = conjunction();
      if ((left && *left != 0) || (right && *right != 0)) {
        left = 1;
      } else if (!left || !right) {
        left = std::nullopt;
      } else {
        left = 0;
      }
    }
    return left;
  }
  Value conjunction() {
    Value left = comparison();
    while (take("&&")) {
      Value right = comparison();
      if ((left && *left == 0) || (right && *right == 0)) {
        left = 0;
      } else if (!left || !right) {
        left = std::nullopt;
      } else {
        left = 1;
      }
    }
    return left;
  }
  Value comparison() {
    Value left = unary();
    for (std::string_view op : {">=", "<=", "==", "!=", ">", "<"}) {
      if (!take(op)) continue;
      Value right = unary();
      if (!left || !right) return std::nullopt;
      bool result = op == ">="   ? *left >= *right
                    : op == "<=" ? *left <= *right
                    : op == "==" ? *left == *right
                    : op == "!=" ? *left != *right
                    : op == ">"  ? *left > *right
                                 : *left < *right;
      return result ? 1 : 0;
    }
    return left;
  }
  Value unary() {
    if (take("!")) {
      Value value = unary();
      return value ? Value(*value == 0 ? 1 : 0) : std::nullopt;
    }
    if (take("(")) {
      Value value = disjunction();
      if (!take(")")) broken_ = true;
      return value;
    }
    std::string word = identifier();
    if (word == "defined") {
      bool parenthesized = take("(");
      std::string name = identifier();
      if (parenthesized && !take(")")) broken_ = true;
      return defined(name);
    }
    if (!word.empty()) return macro(word);
    return number();
  }
  Value defined(const std::string& name) const {
    if (name == "__CUDACC_RTC__" || name == "__CUDACC__") return 1;
    if (name == "__CUDA_ARCH__") return cuda_arch_ != 0 ? Value(1) : std::nullopt;
    return std::nullopt;  // the kernel or an option may define it
  }
  Value macro(const std::string& name) const {
    if (name == "__CUDACC_RTC__" || name == "__CUDACC__") return 1;
    if (name == "__CUDA_ARCH__" && cuda_arch_ != 0) return cuda_arch_;
    return std::nullopt;
  }
  Value number() {
    skip_space();
    size_t begin = at_;
    while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_])) != 0) ++at_;
    if (at_ == begin) {
      broken_ = true;
      return std::nullopt;
    }
    long value = std::stol(std::string(text_.substr(begin, at_ - begin)));
    while (at_ < text_.size() && std::isalpha(static_cast<unsigned char>(text_[at_])) != 0) ++at_;
    return value;
  }
  std::string identifier() {
    skip_space();
    size_t begin = at_;
    auto word_char = [&](size_t i) {
      char c = text_[i];
      return c == '_' || std::isalpha(static_cast<unsigned char>(c)) != 0 ||
             (i > begin && std::isdigit(static_cast<unsigned char>(c)) != 0);
    };
    while (at_ < text_.size() && word_char(at_)) ++at_;
    return std::string(text_.substr(begin, at_ - begin));
  }
  bool take(std::string_view token) {
    skip_space();
    if (!text_.substr(at_).starts_with(token)) return false;
    // "!" is not "!=", "<" is not "<=": the longer operators are tried first by the callers.
    if (token == "!" && text_.substr(at_).starts_with("!=")) return false;
    at_ += token.size();
    return true;
  }
  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_])) != 0) ++at_;
  }

  std::string_view text_;
  int cuda_arch_;
  size_t at_ = 0;
  bool broken_ = false;
};

// The toolkit's device headers that declare the same whatever comes before them.
bool self_contained(std::string_view header) {
  static const std::set<std::string_view> kHeaders = {
      "cuda_fp16.h", "cuda_bf16.h",          "cuda_fp8.h",      "cuda_fp6.h",      "cuda_fp4.h",
      "mma.h",       "cooperative_groups.h", "cuda_pipeline.h", "cuda_awbarrier.h"};
  return kHeaders.contains(header) || header.starts_with("cuda/") ||
         header.starts_with("cooperative_groups/");
}

// One #if nesting level: whether its current branch is compiled (1), skipped (0) or undecided
// (-1), and whether an earlier branch of it was certainly taken.
struct Level {
  int active;
  bool taken;
  bool undecided_before;
};

// Tracks braces in code lines, skipping comments, strings and character literals.
class Braces {
 public:
  void scan(std::string_view line) {
    for (size_t i = 0; i < line.size(); ++i) {
      char c = line[i];
      char next = i + 1 < line.size() ? line[i + 1] : '\0';
      if (in_comment_) {
        if (c == '*' && next == '/') in_comment_ = false, ++i;
      } else if (c == '/' && next == '*') {
        in_comment_ = true, ++i;
      } else if (c == '/' && next == '/') {
        return;
      } else if (c == '"' || c == '\'') {
        for (++i; i < line.size() && line[i] != c; ++i) i += line[i] == '\\' ? 1 : 0;
      } else if (c == '{') {
        ++depth_;
      } else if (c == '}') {
        --depth_;
      }
    }
  }
  bool outside() const { return depth_ == 0 && !in_comment_; }

 private:
  int depth_ = 0;
  bool in_comment_ = false;
};

// Whether everything enclosing this line is certainly compiled (1), skipped (0) or undecided.
int enclosing(const std::vector<Level>& levels) {
  int state = 1;
  for (const Level& level : levels) {
    if (level.active == 0) return 0;
    if (level.active < 0) state = -1;
  }
  return state;
}

// Applies #if/#ifdef/#ifndef/#elif/#else/#endif to `levels`. False for any other directive.
bool conditional(std::string_view word, std::string_view rest, int cuda_arch,
                 std::vector<Level>& levels) {
  auto decided = [](int value) { return value >= 0; };
  if (word == "if" || word == "ifdef" || word == "ifndef") {
    std::string expression =
        word == "if" ? std::string(rest) : "defined(" + std::string(rest) + ")";
    int value = nvrtc_condition(expression, cuda_arch);
    if (word == "ifndef" && decided(value)) value = 1 - value;
    levels.push_back({value, value == 1, value < 0});
  } else if ((word == "elif" || word == "else") && !levels.empty()) {
    Level& level = levels.back();
    int value = word == "else" ? 1 : nvrtc_condition(rest, cuda_arch);
    if (level.taken) {
      level.active = 0;
    } else if (level.undecided_before || level.active < 0) {
      level.active = -1, level.undecided_before = true;
    } else {
      level.active = value, level.taken = value == 1, level.undecided_before = value < 0;
    }
  } else if (word == "endif" && !levels.empty()) {
    levels.pop_back();
  } else {
    return false;
  }
  return true;
}

// Whether a #define or #undef stops later headers from moving up: one that may configure a
// header does (__CUDA_NO_HALF_OPERATORS__ and the like are object-like); a function-like macro,
// a spelling the preamble defines the same way, or an #undef of the kernel's own function-like
// macro does not.
bool configures(std::string_view word, std::string_view rest, std::set<std::string>& functions) {
  size_t end = 0;
  while (end < rest.size() &&
         (std::isalnum(static_cast<unsigned char>(rest[end])) != 0 || rest[end] == '_')) {
    ++end;
  }
  std::string name(rest.substr(0, end));
  if (word == "undef") return !functions.contains(name);
  if (end < rest.size() && rest[end] == '(') {
    functions.insert(name);
    return false;
  }
  return name != "__asm__" && name != "__volatile__" && name != "INFINITY";
}

}  // namespace

int nvrtc_condition(std::string_view expression, int cuda_arch) {
  std::string_view text = trimmed(expression);
  if (size_t comment = text.find("//"); comment != std::string_view::npos) {
    text = trimmed(text.substr(0, comment));
  }
  if (text.find("/*") != std::string_view::npos) return -1;
  Value value = Condition(text, cuda_arch).evaluate();
  return value ? (*value != 0 ? 1 : 0) : -1;
}

std::vector<std::string> hoistable_includes(std::string_view code, int cuda_arch,
                                            const ToolkitHeader& toolkit_header) {
  std::vector<std::string> headers;
  std::vector<Level> levels;
  std::set<std::string> functions;
  Braces braces;
  std::istringstream in{std::string(code)};
  bool continued = false;
  for (std::string line; std::getline(in, line);) {
    std::string_view text = trimmed(line);
    bool was_continued = std::exchange(continued, text.ends_with("\\"));
    if (was_continued) continue;  // the rest of a directive or macro body
    if (!text.starts_with("#")) {
      if (enclosing(levels) != 0) braces.scan(text);
      continue;
    }
    std::string_view directive = trimmed(text.substr(1));
    size_t space = directive.find_first_of(" \t<\"(");
    std::string_view word = directive.substr(0, space);
    std::string_view rest = space == std::string_view::npos ? "" : trimmed(directive.substr(space));
    if (conditional(word, rest, cuda_arch, levels)) continue;
    int state = enclosing(levels);
    if (state == 0) continue;  // never compiled: changes nothing
    if (word == "define" || word == "undef") {
      if (configures(word, rest, functions)) break;
      continue;
    }
    if (word != "include" || trimmed(line) == "#include <cuda.h>") continue;  // dropped anyway
    bool angled = rest.starts_with("<") && rest.find('>') != std::string_view::npos;
    std::string header(angled ? rest.substr(1, rest.find('>') - 1) : "");
    if (state < 0 || !angled || !self_contained(header) || !braces.outside() ||
        !toolkit_header(header)) {
      break;
    }
    if (std::find(headers.begin(), headers.end(), header) == headers.end()) {
      headers.push_back(header);
    }
  }
  return headers;
}

std::vector<std::string> nvrtc_includes(std::string_view code, int cuda_arch) {
  std::vector<std::string> includes;
  std::vector<Level> levels;
  std::istringstream in{std::string(code)};
  bool continued = false;
  for (std::string line; std::getline(in, line);) {
    std::string_view text = trimmed(line);
    bool was_continued = std::exchange(continued, text.ends_with("\\"));
    if (was_continued || !text.starts_with("#")) continue;
    std::string_view directive = trimmed(text.substr(1));
    size_t space = directive.find_first_of(" \t<\"(");
    std::string_view word = directive.substr(0, space);
    std::string_view rest = space == std::string_view::npos ? "" : trimmed(directive.substr(space));
    if (conditional(word, rest, cuda_arch, levels)) continue;
    if (word == "include" && enclosing(levels) != 0) includes.emplace_back(rest);
  }
  return includes;
}

}  // namespace kiln::cuda::internal
