// NVRTC's log as kiln passes it on: the user's diagnostics, not the toolkit's or kiln's own.
#include <gtest/gtest.h>

#include "toolchains/cuda/backends.h"

namespace kiln::cuda::internal {
namespace {

// As NVRTC 13 writes it for a TVM kernel that includes cuda/std/type_traits (which pulls in
// cuda_fp8.hpp) and has an unused variable, plus a PCH note.
constexpr const char* kLog =
    "/cuda/include/cuda_fp8.hpp(1461): warning #1444-D: class \"double4\" was declared "
    "deprecated\n"
    "      explicit __nv_fp8x4_e5m2(const double4 f) {\n"
    "                                       ^\n"
    "\n"
    "Remark: The warnings can be suppressed with \"-diag-suppress <warning-number>\"\n"
    "\n"
    "/work/k.cu(4): warning #177-D: variable \"x\" was declared but never referenced\n"
    "    int x = 1;\n"
    "        ^\n"
    "\n"
    "k.cu(21): warning #20283-D: PCH creation disabled because #line directive encountered\n"
    "  #line 1 \"k.cu\"\n"
    "   ^\n"
    "\n";

TEST(NvrtcLog, ToolkitWarningsAndPchNotesGoTheUsersStay) {
  std::string log = without_diagnostics(kLog, [](std::string_view line) {
    return is_pch_note(line) || is_toolkit_warning(line, {"/cuda/include"});
  });
  EXPECT_EQ(log,
            "Remark: The warnings can be suppressed with \"-diag-suppress <warning-number>\"\n"
            "\n"
            "/work/k.cu(4): warning #177-D: variable \"x\" was declared but never referenced\n"
            "    int x = 1;\n"
            "        ^\n");
}

TEST(NvrtcLog, TheRemarkGoesWhenNoWarningIsLeft) {
  std::string log = without_diagnostics(
      kLog, [](std::string_view line) { return line.find("warning") != std::string_view::npos; });
  EXPECT_EQ(log, "");
  EXPECT_FALSE(is_toolkit_warning("/cuda/include/x.h(1): error: bad", {"/cuda/include"}))
      << "errors are never dropped";
  EXPECT_FALSE(is_toolkit_warning("/cuda/includes/x.h(1): warning #1", {"/cuda/include"}));
}

}  // namespace
}  // namespace kiln::cuda::internal
