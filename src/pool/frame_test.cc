#include "frame.h"

#include <fcntl.h>

#include <cstring>

#include <gtest/gtest.h>

#include "internal/fd.h"
#include "kiln/error.h"
#include "outbox.h"

namespace kiln::internal {
namespace {

TEST(Frame, RoundTripsSplitAnywhere) {
  nlohmann::json values[] = {
      nullptr, 42, "text", {{"a", 1}, {"b", {1, 2, 3}}}, nlohmann::json::binary({0, 1, 2, 255})};
  std::string stream;
  for (const auto& v : values) stream += encode_frame(v);
  for (size_t piece : {size_t{1}, size_t{3}, size_t{7}, stream.size()}) {
    FrameDecoder decoder;
    std::vector<nlohmann::json> out;
    for (size_t at = 0; at < stream.size(); at += piece) {
      decoder.feed(stream.data() + at, std::min(piece, stream.size() - at));
      while (auto v = decoder.next()) out.push_back(*v);
    }
    ASSERT_EQ(out.size(), std::size(values)) << "piece " << piece;
    for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], values[i]);
    EXPECT_TRUE(decoder.at_boundary());
  }
}

TEST(Frame, LengthIsFourBytesLittleEndian) {
  std::string frame = encode_frame("abc");
  std::vector<std::uint8_t> cbor = nlohmann::json::to_cbor("abc");
  ASSERT_EQ(frame.size(), 4 + cbor.size());
  EXPECT_EQ(static_cast<unsigned char>(frame[0]), cbor.size());
  EXPECT_EQ(frame.substr(1, 3), std::string(3, '\0'));
}

TEST(Frame, OversizeAndGarbageAreProtocolErrors) {
  FrameDecoder small(16);
  std::string big = encode_frame(std::string(100, 'x'));
  small.feed(big.data(), 4);
  EXPECT_THROW(small.next(), ProtocolError) << "refused from the length alone";
  FrameDecoder decoder;
  const char garbage[] = "\x02\x00\x00\x00\xff\xff";
  decoder.feed(garbage, 6);
  EXPECT_THROW(decoder.next(), ProtocolError);
  EXPECT_THROW(encode_frame(std::string(100, 'x'), 16), InvalidArgument);
  // Found by fuzz/frame_fuzz: an array announcing 2^64-1 elements made nlohmann throw its own
  // exception despite allow_exceptions = false.
  FrameDecoder huge;
  const char huge_array[] = "\x09\x00\x00\x00\x9b\xff\xff\xff\xff\xff\xff\xff\xff";
  huge.feed(huge_array, 13);
  EXPECT_THROW(huge.next(), ProtocolError);
}

// Frames with large strings referenced in place, through a small non-blocking pipe, read back
// while they are written: every byte arrives, in order, however the writes were cut.
TEST(Outbox, ReferencedStringsArriveWholeThroughASmallPipe) {
  std::string text(100'000, 't');
  std::vector<std::uint8_t> bytes(70'000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i * 13);
  nlohmann::json args = {{"a", text}, {"b", nlohmann::json::binary(bytes)}, {"c", "small"}};
  nlohmann::json answer = nlohmann::json::binary(bytes);  // referenced: must outlive the writes
  Outbox out;
  out.append_call("first", args, true);
  out.append_answer(answer, true);
  out.append_error("std::logic_error", "no");
  out.append_call("last", 7, false);
  Pipe pipe = make_pipe();
  (void)::fcntl(pipe.write.get(), F_SETPIPE_SZ, 4096);
  set_nonblocking(pipe.write.get());
  set_nonblocking(pipe.read.get());
  FrameDecoder decoder;
  std::vector<nlohmann::json> received;
  int writes = 0;
  while (!out.empty() || received.size() < 4) {
    if (!out.empty()) {
      long n = out.write_some(pipe.write.get(), true);
      ASSERT_TRUE(n > 0 || errno == EAGAIN) << std::strerror(errno);
      ++writes;
    }
    ssize_t n = decoder.read_from(pipe.read.get());
    ASSERT_TRUE(n > 0 || errno == EAGAIN);
    while (auto value = decoder.next()) received.push_back(std::move(*value));
  }
  EXPECT_GT(writes, 20) << "the pipe took the frames in many pieces";
  ASSERT_EQ(received.size(), 4u);
  EXPECT_EQ(received[0], nlohmann::json::array({"first", args}));
  EXPECT_EQ(received[1], nlohmann::json::array({true, nlohmann::json::binary(bytes)}));
  EXPECT_EQ(received[2], nlohmann::json::array({false, "std::logic_error", "no"}));
  EXPECT_EQ(received[3], nlohmann::json::array({"last", 7}));
  EXPECT_TRUE(decoder.at_boundary());
}

TEST(Outbox, AnOversizeFrameLeavesTheOutboxAsItWas) {
  Outbox out;
  out.append_call("kept", 1, false);
  std::string big(5000, 'x');
  EXPECT_THROW(out.append_call("too big", big, true, 4096), InvalidArgument);
  EXPECT_THROW(out.append_answer(big, false, 4096), InvalidArgument);
  Pipe pipe = make_pipe();
  while (!out.empty()) ASSERT_GT(out.write_some(pipe.write.get(), true), 0);
  FrameDecoder decoder;
  ASSERT_GT(decoder.read_from(pipe.read.get()), 0);
  EXPECT_EQ(decoder.next(), nlohmann::json::array({"kept", 1}));
  EXPECT_TRUE(decoder.at_boundary()) << "nothing of the refused frames was written";
}

}  // namespace
}  // namespace kiln::internal
