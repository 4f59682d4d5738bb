#include "pool/frame.h"

#include <gtest/gtest.h>

#include "kiln/error.h"

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

}  // namespace
}  // namespace kiln::internal
