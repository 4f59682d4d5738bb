// Recipes (kiln/recipe.h) and tool identities (kiln/tool_identities.h): the header examples, the
// order and error contract of perform(), and identify().
#include "kiln/recipe.h"

#include <gtest/gtest.h>

#include <fstream>

#include "kiln/cc.h"
#include "kiln/direct_cache.h"
#include "kiln/error.h"
#include "kiln/paths.h"
#include "kiln/temp_directory.h"
#include "kiln/tool_identities.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

class RecipeWithCompiler : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cc::get_cc()) GTEST_SKIP() << "needs a C compiler";
    std::ofstream(dir / "add.c") << "int add(int a, int b) { return a + b; }\n";
  }
  TempDirectory dir;
};

// The header's example: the tool is exactly argv[0] of the step that runs it.
TEST_F(RecipeWithCompiler, TheToolIsArgvZeroOfItsStep) {
  Recipe recipe = cc::shared_recipe(dir / "libadd.so", {dir / "add.c"}, {.options = {"-O2"}});
  ASSERT_EQ(recipe.tools.size(), 1u);
  ASSERT_EQ(recipe.steps.size(), 1u);
  const auto& step = std::get<ToolStep>(recipe.steps[0]);
  EXPECT_EQ(step.label, "Compilation error:");
  EXPECT_EQ(step.run.argv.front(), recipe.tools[0].program);
  EXPECT_EQ(recipe.inputs, std::vector<fs::path>{dir / "add.c"});
  EXPECT_TRUE(perform(recipe).ok());
  EXPECT_TRUE(fs::exists(dir / "libadd.so"));
}

TEST_F(RecipeWithCompiler, ALauncherIsATool) {
  if (!which("ccache")) GTEST_SKIP() << "needs ccache";
  Recipe recipe =
      cc::object_recipe(dir / "add.o", {dir / "add.c"}, {.launcher = Launcher::ccache()});
  ASSERT_EQ(recipe.tools.size(), 2u);
  const auto& argv = std::get<ToolStep>(recipe.steps[0]).run.argv;
  EXPECT_EQ(argv[0], recipe.tools[0].program);  // the launcher
  EXPECT_EQ(argv[1], recipe.tools[1].program);  // the compiler
}

TEST_F(RecipeWithCompiler, IdentifyFillsTheRealPathAndIdentityOfEveryProgram) {
  Recipe recipe = cc::object_recipe(dir / "add.o", {dir / "add.c"});
  Cache cache = Cache::disabled();
  ToolIdentities identities(cache);
  identities.identify(recipe);
  const RecipeTool& compiler = recipe.tools[0];
  std::optional<fs::path> found = compiler.program.find('/') == std::string::npos
                                      ? which(compiler.program)
                                      : std::optional<fs::path>(compiler.program);
  ASSERT_TRUE(found);
  EXPECT_EQ(compiler.path, fs::canonical(*found));
  // Known by its content (the same compiler elsewhere is the same tool), then its version.
  EXPECT_TRUE(compiler.identity.starts_with(file_content_identity(compiler.path) + " "))
      << compiler.identity;
  EXPECT_EQ(compiler.identity.find(compiler.path.string()), std::string::npos)
      << "a path is per machine: " << compiler.identity;
  EXPECT_EQ(identities.of(compiler.program).text, compiler.identity) << "asked once";
}

TEST(Recipe, StepsRunInOrderAndTheFirstFailureStopsTheRest) {
  std::vector<std::string> done;
  Recipe recipe;
  recipe.steps.emplace_back(CallStep{.name = "one", .call = [&] { done.push_back("one"); }});
  recipe.steps.emplace_back(ToolStep{.label = "Oops:", .run = {.argv = {"sh", "-c", "exit 3"}}});
  recipe.steps.emplace_back(CallStep{.name = "three", .call = [&] { done.push_back("three"); }});
  try {
    perform(recipe);
    FAIL() << "the tool step failed";
  } catch (const ToolFailed& e) {
    EXPECT_EQ(e.label(), "Oops:");
  }
  EXPECT_EQ(done, std::vector<std::string>{"one"});
}

TEST(Recipe, AFailureNoteIsAddedToTheOutput) {
  Recipe recipe;
  recipe.steps.emplace_back(ToolStep{.label = "Compilation error:",
                                     .run = {.argv = {"sh", "-c", "echo bad; exit 1"}},
                                     .failure_note = "kiln: why this command"});
  try {
    perform(recipe);
    FAIL();
  } catch (const ToolFailed& e) {
    EXPECT_EQ(e.output(), "bad\nkiln: why this command");
  }
}

TEST(Recipe, PerformReturnsTheLastToolStepsResult) {
  Recipe recipe;
  recipe.steps.emplace_back(ToolStep{.label = "x", .run = {.argv = {"sh", "-c", "echo first"}}});
  recipe.steps.emplace_back(ToolStep{.label = "x", .run = {.argv = {"sh", "-c", "echo last"}}});
  recipe.steps.emplace_back(CallStep{.name = "nothing", .call = [] {}});
  EXPECT_EQ(perform(recipe).output, "last\n");
  EXPECT_TRUE(perform(Recipe{}).output.empty());
}

TEST(ToolIdentities, AMissingProgramIsItsName) {
  Cache cache = Cache::disabled();
  ToolIdentities identities(cache);
  ToolIdentities::Identity missing = identities.of("kiln-no-such-tool");
  EXPECT_EQ(missing.text, "kiln-no-such-tool");
  EXPECT_TRUE(missing.path.empty());
}

}  // namespace
}  // namespace kiln
