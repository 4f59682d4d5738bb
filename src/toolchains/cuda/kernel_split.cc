// kernel_definitions() and the parts made of them (kernel_split.h).
#include "kernel_split.h"

#include <algorithm>
#include <cctype>
#include <numeric>

#include "kiln/text.h"

namespace kiln::cuda::internal {
namespace {

bool word_char(char c) { return c == '_' || std::isalnum(static_cast<unsigned char>(c)) != 0; }

// The device library's functions that print or take strings: printf, and assert's message.
bool printing(std::string_view word) {
  return word == "printf" || word == "vprintf" || word == "assert" || word == "__assertfail" ||
         word == "__assert_fail";
}

// Reads C++ at file scope, as much as telling the kernels' definitions apart needs: comments,
// string and character literals, preprocessor lines, words and braces. Every other character is
// only "something": a part of the statement it is in.
class Scanner {
 public:
  explicit Scanner(std::string_view code) : code_(code) {}

  std::optional<std::vector<KernelSpan>> kernels() {
    while (ok_ && at_ < code_.size()) step();
    if (!ok_ || depth_ != 0 || (first_kernel_ && statement_ != kNone) || kernels_.size() < 2) {
      return std::nullopt;
    }
    return kernels_;
  }

  // What unsplittable() says of the code read.
  const std::string& unsplittable() const { return unsplittable_; }

 private:
  static constexpr size_t kNone = std::string_view::npos;

  void step() {
    char c = code_[at_];
    if (c == '\n') {
      line_start_ = true;
      ++at_;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++at_;
    } else if (line_start_ && c == '#') {
      directive();
    } else if (code_.substr(at_, 2) == "//") {
      at_ = std::min(code_.find('\n', at_), code_.size());
    } else if (code_.substr(at_, 2) == "/*") {
      block_comment();
    } else {
      line_start_ = false;
      significant(c);
    }
  }

  void significant(char c) {
    if (closed_ && c != ';') end_statement();  // `}` ended a definition; `};` ends here
    closed_ = false;
    if (depth_ == 0 && statement_ == kNone) statement_ = at_;
    if (c == '"' || c == '\'') {
      literal(c);
    } else if (word_char(c)) {
      word();
    } else if (c == '{') {
      open();
    } else if (c == '}') {
      close();
    } else if (c == ';' && depth_ == 0) {
      ++at_;
      declaration_ended();
    } else {
      ++at_;
    }
  }

  // A preprocessor line (continued by backslashes): read past before the first kernel; after it
  // only #pragma inside a kernel, which concerns that kernel alone.
  void directive() {
    size_t begin = at_;
    while (at_ < code_.size() && code_[at_] != '\n') {
      at_ += code_[at_] == '\\' && at_ + 1 < code_.size() ? 2 : 1;
    }
    std::string_view text = trimmed(code_.substr(begin + 1, at_ - begin - 1));
    if (first_kernel_ && !(in_kernel_ && text.starts_with("pragma"))) ok_ = false;
  }

  void block_comment() {
    size_t end = code_.find("*/", at_ + 2);
    if (end == kNone) {
      ok_ = false;
      return;
    }
    at_ = end + 2;
  }

  void literal(char quote) {
    if (quote == '\'' && at_ > 0 && std::isalnum(static_cast<unsigned char>(code_[at_ - 1]))) {
      ++at_;  // a digit separator (1'000)
      return;
    }
    if (quote == '"' && at_ > 0 && code_[at_ - 1] == 'R') {
      ok_ = false;  // a raw string: its text is not read here
      return;
    }
    for (++at_; at_ < code_.size() && code_[at_] != quote && code_[at_] != '\n'; ++at_) {
      if (code_[at_] == '\\') ++at_;
    }
    if (at_ >= code_.size() || code_[at_] != quote) ok_ = false;
    ++at_;
  }

  void word() {
    size_t begin = at_;
    while (at_ < code_.size() && word_char(code_[at_])) ++at_;
    std::string_view text = code_.substr(begin, at_ - begin);
    namespace_ = text == "namespace";  // a name after it: not an anonymous one
    if (unsplittable_.empty() && printing(text)) {
      unsplittable_ = std::string(text) +
                      " (NVVM names the strings it uses $str, $str$1, ... in each program's own "
                      "order: the parts' would collide)";
    }
    if (text == "__global__") {
      if (depth_ != 0) ok_ = false;  // in a namespace, extern "C" { } or a class: not read here
      global_ = true;
    } else if (text == "template" && depth_ == 0) {
      template_ = true;
    }
  }

  void open() {
    if (namespace_ && unsplittable_.empty()) {
      unsplittable_ =
          "an anonymous namespace (NVRTC names what it holds after the program's first kernel: "
          "each part would hold its own copy)";
    }
    namespace_ = false;
    if (depth_ == 0) {
      in_kernel_ = global_ && !template_;
      if (in_kernel_ && !first_kernel_) first_kernel_ = statement_;
      if (first_kernel_ && !in_kernel_) ok_ = false;  // a helper or a type after a kernel
    }
    ++depth_;
    ++at_;
  }

  void close() {
    if (depth_ == 0) {
      ok_ = false;
      return;
    }
    ++at_;
    if (--depth_ != 0) return;
    if (in_kernel_) {
      kernels_.push_back({statement_, at_});
      in_kernel_ = false;
      end_statement();
    } else {
      closed_ = true;
    }
  }

  // A statement at file scope ended with `;`: after the first kernel, only a declaration of a
  // __global__ function (TVM declares them all before the first definition) may be there.
  void declaration_ended() {
    if (first_kernel_ && (!global_ || template_)) ok_ = false;
    end_statement();
  }

  void end_statement() {
    statement_ = kNone;
    global_ = false;
    template_ = false;
  }

  std::string_view code_;
  size_t at_ = 0;
  int depth_ = 0;
  bool ok_ = true;
  bool line_start_ = true;
  size_t statement_ = kNone;  // where the statement at file scope that is being read began
  bool global_ = false;       // it holds __global__
  bool template_ = false;     // it holds template
  bool closed_ = false;       // a `}` just closed a definition at file scope that is no kernel
  bool in_kernel_ = false;
  std::optional<size_t> first_kernel_;
  std::vector<KernelSpan> kernels_;
  bool namespace_ = false;    // the last word was `namespace`
  std::string unsplittable_;  // the first thing read that the parts would not compile alike
};

}  // namespace

std::optional<std::vector<KernelSpan>> kernel_definitions(std::string_view code) {
  return Scanner(code).kernels();
}

std::optional<std::string> unsplittable(std::string_view code) {
  Scanner scanner(code);
  if (!scanner.kernels() || scanner.unsplittable().empty()) return std::nullopt;
  return scanner.unsplittable();
}

std::vector<std::vector<size_t>> balanced_groups(const std::vector<KernelSpan>& kernels,
                                                 size_t groups) {
  groups = std::max<size_t>(1, std::min(groups, kernels.size()));
  std::vector<size_t> order(kernels.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return kernels[a].size() > kernels[b].size(); });
  std::vector<std::vector<size_t>> result(groups);
  std::vector<size_t> bytes(groups, 0);
  for (size_t kernel : order) {
    size_t lightest = std::min_element(bytes.begin(), bytes.end()) - bytes.begin();
    result[lightest].push_back(kernel);
    bytes[lightest] += kernels[kernel].size();
  }
  std::erase_if(result, [](const auto& group) { return group.empty(); });
  for (auto& group : result) std::sort(group.begin(), group.end());
  std::sort(result.begin(), result.end());
  return result;
}

std::string with_kernels_only(std::string_view code, const std::vector<KernelSpan>& kernels,
                              const std::vector<size_t>& keep) {
  std::string part;
  part.reserve(code.size());
  size_t at = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (std::find(keep.begin(), keep.end(), i) != keep.end()) continue;
    part.append(code.substr(at, kernels[i].begin - at));
    std::string_view dropped = code.substr(kernels[i].begin, kernels[i].size());
    part.append(static_cast<size_t>(std::count(dropped.begin(), dropped.end(), '\n')), '\n');
    at = kernels[i].end;
  }
  part.append(code.substr(at));
  return part;
}

}  // namespace kiln::cuda::internal
