#include "nvrtc_source.h"

#include <sstream>
#include <vector>

namespace kiln::cuda::internal {
namespace {

constexpr std::string_view kNvshmemPreamble =
    "#include <cuda/std/type_traits>\n"
    "namespace std {\n"
    "  using cuda::std::is_integral;\n"
    "  using cuda::std::is_signed;\n"
    "  using cuda::std::is_unsigned;\n"
    "  using cuda::std::is_floating_point;\n"
    "  using cuda::std::is_same;\n"
    "  using cuda::std::enable_if;\n"
    "  using cuda::std::conditional;\n"
    "}\n\n";

constexpr std::string_view kIntegerInclude = "#include <cuda/std/cstdint>\n";

constexpr std::string_view kIntegerNames =
    "using cuda::std::uint8_t;\n"
    "using cuda::std::uint16_t;\n"
    "using cuda::std::uint32_t;\n"
    "using cuda::std::uint64_t;\n"
    "using cuda::std::int8_t;\n"
    "using cuda::std::int16_t;\n"
    "using cuda::std::int32_t;\n"
    "using cuda::std::int64_t;\n\n";

constexpr std::string_view kMacros =
    "#ifndef __asm__\n"
    "#define __asm__ asm\n"
    "#endif\n"
    "#ifndef __volatile__\n"
    "#define __volatile__ volatile\n"
    "#endif\n"
    "#ifndef INFINITY\n"
    "#define INFINITY __int_as_float(0x7f800000)\n"
    "#endif\n\n";

constexpr std::string_view kTensorMap =
    "struct __align__(128) CUtensorMap {\n"
    "  unsigned long long opaque[16];\n"
    "};\n\n";

std::string_view trimmed(std::string_view line) {
  size_t begin = line.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return {};
  size_t end = line.find_last_not_of(" \t\r");
  return line.substr(begin, end - begin + 1);
}

// The kernel's lines, without `#include <cuda.h>` (host-only: NVRTC has no driver header).
std::vector<std::string> kernel_lines(std::string_view code) {
  std::vector<std::string> lines;
  std::istringstream in{std::string(code)};
  for (std::string line; std::getline(in, line);) {
    if (trimmed(line) != "#include <cuda.h>") lines.push_back(std::move(line));
  }
  return lines;
}

// How many lines at the top are preprocessor lines, blank lines or // comments, ending where
// every #if opened there is closed (so that nothing is moved into or out of a conditional).
size_t leading_directives(const std::vector<std::string>& lines) {
  size_t end = 0;
  int depth = 0;
  bool continued = false;  // the previous directive ended with a backslash
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = trimmed(lines[i]);
    bool directive = continued || line.starts_with("#");
    if (!directive && !line.empty() && !line.starts_with("//")) break;
    if (directive && !continued) {
      std::string_view word = trimmed(line.substr(1));
      if (word.starts_with("if")) ++depth;
      if (word.starts_with("endif")) --depth;
    }
    continued = directive && line.ends_with("\\");
    if (depth == 0 && !continued) end = i + 1;
  }
  return end;
}

std::string joined(const std::vector<std::string>& lines, size_t begin, size_t end) {
  std::string text;
  for (size_t i = begin; i < end; ++i) text += lines[i] + (i + 1 < lines.size() ? "\n" : "");
  return text;
}

}  // namespace

std::string seed_nvrtc_source(std::string_view code, bool nvshmem) {
  std::vector<std::string> lines = kernel_lines(code);
  std::string body = joined(lines, 0, lines.size());
  std::string source;
  if (nvshmem) source += kNvshmemPreamble;
  source += kIntegerInclude;
  source += kIntegerNames;
  source += kMacros;
  if (body.find("CUtensorMap") != std::string::npos) source += kTensorMap;
  return source + body;
}

std::string nvrtc_source(std::string_view code, bool nvshmem) {
  std::vector<std::string> lines = kernel_lines(code);
  std::string body = joined(lines, 0, lines.size());
  size_t split = leading_directives(lines);
  std::string source;
  if (nvshmem) source += kNvshmemPreamble;
  source += kIntegerInclude;
  source += kMacros;
  // A declaration ends the precompiled prefix, and a leading #include may need CUtensorMap:
  // with it, the seed's order is kept.
  if (body.find("CUtensorMap") != std::string::npos) {
    return source + std::string(kIntegerNames) + std::string(kTensorMap) + body;
  }
  source += joined(lines, 0, split);
  if (split > 0 && !source.ends_with('\n')) source += '\n';
  source += kIntegerNames;
  return source + joined(lines, split, lines.size());
}

}  // namespace kiln::cuda::internal
