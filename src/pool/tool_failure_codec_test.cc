#include "tool_failure_codec.h"

#include <gtest/gtest.h>

#include "cbor.h"

namespace kiln::internal {
namespace {

TEST(ToolFailureCodec, EveryFieldRoundTrips) {
  ToolFailure failure{.label = "NVRTC compilation failed:",
                      .output = "k.cu(1): error\n\x01\xff binary too",
                      .command_line = "nvrtc k.cu",
                      .ending = Ending::signaled(11),
                      .status = "killed by signal SIGSEGV",
                      .source = "__global__ void k() {}",
                      .source_path = "/src/k.cu"};
  std::optional<ToolFailure> back = decode_failure(encode_failure(failure));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->label, failure.label);
  EXPECT_EQ(back->output, failure.output);
  EXPECT_EQ(back->command_line, failure.command_line);
  EXPECT_EQ(back->ending, failure.ending);
  EXPECT_EQ(back->status, failure.status);
  EXPECT_EQ(back->source, failure.source);
  EXPECT_EQ(back->source_path, failure.source_path);
}

TEST(ToolFailureCodec, OtherDetailsAreNotAFailure) {
  EXPECT_FALSE(decode_failure(""));
  EXPECT_FALSE(decode_failure("\x80\x04pickled"));  // a Python worker's pickle
  std::string other;
  cbor::append(other, nlohmann::json{{"label", "x"}});  // a map without the other fields
  EXPECT_FALSE(decode_failure(other));
  std::string bad_ending = encode_failure({.ending = {static_cast<Ending::Kind>(9), 0}});
  EXPECT_FALSE(decode_failure(bad_ending)) << "an ending kind kiln does not know";
}

}  // namespace
}  // namespace kiln::internal
