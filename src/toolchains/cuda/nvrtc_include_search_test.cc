// Where NVRTC finds headers, and what a precompiled header's prefix may read outside the
// toolkit (nvrtc_pch.h), on directories made by the test: one stands for the toolkit's.
#include <gtest/gtest.h>

#include <fstream>

#include "kiln/temp_directory.h"
#include "toolchains/cuda/nvrtc_pch.h"

namespace kiln::cuda::internal {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

class IncludeSearchTest : public ::testing::Test {
 protected:
  fs::path toolkit() const { return dir_.path() / "toolkit"; }
  fs::path user() const { return dir_.path() / "user"; }
  TempDirectory dir_;
};

TEST_F(IncludeSearchTest, AHeaderIsTheToolkitsOnlyWhenTheSearchFindsItThereFirst) {
  write(toolkit() / "cuda" / "a.h", "");
  write(user() / "cuda" / "a.h", "");
  write(user() / "cuda" / "x.h", "");
  IncludeSearch toolkit_first({"-I" + toolkit().string(), "-I" + user().string()}, {toolkit()});
  EXPECT_TRUE(toolkit_first.from_toolkit("cuda/a.h"));
  EXPECT_FALSE(toolkit_first.from_toolkit("cuda/x.h")) << "a user's header named cuda/...";
  EXPECT_FALSE(toolkit_first.from_toolkit("cuda/missing.h"));
  EXPECT_EQ(toolkit_first.find("cuda/x.h"), user() / "cuda" / "x.h");
  EXPECT_FALSE(toolkit_first.relative());
  // Every spelling of an include directory, in order: the user's shadows the toolkit's here.
  for (const std::vector<std::string>& options :
       {std::vector<std::string>{"--include-path=" + user().string(), "-I" + toolkit().string()},
        std::vector<std::string>{"-I", user().string(), "--include-path", toolkit().string()}}) {
    IncludeSearch user_first(options, {toolkit()});
    EXPECT_FALSE(user_first.from_toolkit("cuda/a.h")) << options[0];
    EXPECT_EQ(user_first.find("cuda/a.h"), user() / "cuda" / "a.h");
  }
  IncludeSearch relative({"-Iinc", "-DX=1"}, {toolkit()});
  EXPECT_TRUE(relative.relative());
  EXPECT_EQ(relative.dirs(), std::vector<fs::path>{fs::current_path() / "inc"});
}

TEST_F(IncludeSearchTest, APrefixsInputsAreTheUserFilesItMayReadAndThePlacesSearchedInVain) {
  // The toolkit's header reaches a user's file (found after the toolkit), which includes one
  // beside it; it also asks for headers that are nowhere, under any #if.
  write(toolkit() / "cuda" / "t.h",
        "#include <u.h>\n#if 0\n#  include <v.h>\n#endif\n"
        "#if _CCCL_HAS_INCLUDE(<w.h> )\n#endif\n#include <cuda/t2.h>\n");
  write(toolkit() / "cuda" / "t2.h", "#pragma once\n");
  write(user() / "u.h", "#include \"u2.h\"\n");
  write(user() / "u2.h", "#define KILN_U2 1\n");
  IncludeSearch search({"-I" + toolkit().string(), "-I" + user().string()}, {toolkit()});
  std::optional<PchInputs> inputs = pch_inputs("#include <cuda/t.h>\n", search);
  ASSERT_TRUE(inputs);
  std::vector<fs::path> files;
  for (const auto& [file, digest] : inputs->files) files.push_back(file);
  EXPECT_EQ(files, (std::vector<fs::path>{user() / "u.h", user() / "u2.h"}))
      << "the toolkit's own files are keyed by its identity";
  EXPECT_EQ(inputs->absent, (std::vector<fs::path>{user() / "v.h", user() / "w.h"}));
  EXPECT_TRUE(still_the_same(*inputs));

  write(user() / "u2.h", "#define KILN_U2 2\n");
  EXPECT_FALSE(still_the_same(*inputs)) << "an edited header two includes away";
  write(user() / "u2.h", "#define KILN_U2 1\n");
  EXPECT_TRUE(still_the_same(*inputs));
  write(user() / "w.h", "");
  EXPECT_FALSE(still_the_same(*inputs)) << "a header that appeared where one was looked for";
}

}  // namespace
}  // namespace kiln::cuda::internal
