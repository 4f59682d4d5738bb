#include "nvrtc_source.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "kiln/text.h"
#include "nvrtc_prefix.h"

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

// As TVM 0.27 declares it: the tag with cuda.h's layout and the alias, which <cuda/barrier>
// (CUDA 13) forward-declares and re-typedefs in the same way; a `struct CUtensorMap` clashes with
// it.
constexpr std::string_view kTensorMap =
    "struct alignas(64) CUtensorMap_st {\n"
    "  unsigned long long opaque[16];\n"
    "};\n"
    "typedef struct CUtensorMap_st CUtensorMap;\n\n";

// The kernel's lines, `#include <cuda.h>` (host-only: NVRTC has no driver header) left out; with
// `keep_numbers` it leaves an empty line instead, so that the kernel's line numbers stay.
std::vector<std::string> kernel_lines(std::string_view code, bool keep_numbers) {
  std::vector<std::string> lines;
  std::istringstream in{std::string(code)};
  for (std::string line; std::getline(in, line);) {
    if (trimmed(line) != "#include <cuda.h>") {
      lines.push_back(std::move(line));
    } else if (keep_numbers) {
      lines.emplace_back();
    }
  }
  return lines;
}

// `name` as a string literal for #line.
std::string quoted(std::string_view name) {
  std::string text = "\"";
  for (char c : name) {
    if (c == '"' || c == '\\') {
      text += '\\';
      text += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      text += fmt::format("\\{:03o}", static_cast<unsigned char>(c));
    } else {
      text += c;
    }
  }
  return text + "\"";
}

std::string joined(const std::vector<std::string>& lines, size_t begin, size_t end) {
  std::string text;
  for (size_t i = begin; i < end; ++i) text += lines[i] + (i + 1 < lines.size() ? "\n" : "");
  return text;
}

}  // namespace

std::string seed_nvrtc_source(std::string_view code, bool nvshmem) {
  std::vector<std::string> lines = kernel_lines(code, false);
  std::string body = joined(lines, 0, lines.size());
  std::string source;
  if (nvshmem) source += kNvshmemPreamble;
  source += kIntegerInclude;
  source += kIntegerNames;
  source += kMacros;
  if (body.find("CUtensorMap") != std::string::npos) source += kTensorMap;
  return source + body;
}

NvrtcSource nvrtc_source(std::string_view code, bool nvshmem, int cuda_arch, std::string_view name,
                         const ToolkitHeader& toolkit_header) {
  NvrtcSource source;
  std::string& text = source.text;
  text += kIntegerInclude;
  if (nvshmem) text += "#include <cuda/std/type_traits>\n";
  std::vector<std::string> headers = hoistable_includes(code, cuda_arch, toolkit_header);
  for (const std::string& header : headers) text += "#include <" + header + ">\n";
  text += kMacros;
  // cuda/std/cstdint alone parses in ~20 ms: not worth a precompiled header of ~8 MB.
  bool worth_it = nvshmem || std::any_of(headers.begin(), headers.end(), [](const auto& header) {
                    return header != "cuda/std/cstdint";
                  });
  source.header_prefix = worth_it ? text.size() : 0;
  text += kIntegerNames;  // a declaration: what a precompiled header stands for ends here
  if (nvshmem) text += kNvshmemPreamble.substr(kNvshmemPreamble.find("namespace std"));
  if (code.find("CUtensorMap") != std::string_view::npos) text += kTensorMap;
  text += "#line 1 " + quoted(name) + "\n";
  std::vector<std::string> lines = kernel_lines(code, true);
  text += joined(lines, 0, lines.size());
  return source;
}

}  // namespace kiln::cuda::internal
