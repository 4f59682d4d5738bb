#include "cbor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kiln/error.h"

namespace kiln::internal::cbor {
namespace {

using Json = nlohmann::json;

std::string encode(const Json& value) {
  std::string out;
  append(out, value);
  return out;
}

Json decode_bytes(const std::vector<std::uint8_t>& bytes) {
  return decode(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::vector<Json> samples() {
  return {nullptr,
          true,
          false,
          0,
          23,
          24,
          255,
          256,
          65535,
          65536,
          std::numeric_limits<std::uint32_t>::max(),
          std::numeric_limits<std::uint64_t>::max(),
          -1,
          -24,
          -25,
          -256,
          -257,
          std::numeric_limits<std::int64_t>::min(),
          0.5,
          -1.0e300,
          std::numeric_limits<double>::infinity(),
          "",
          "text",
          std::string(300, 'x'),
          Json::binary({}),
          Json::binary({0, 1, 2, 255}),
          Json::binary({9, 9}, 42),
          Json::array(),
          {1, "two", {3.0, nullptr}},
          Json::object(),
          {{"a", 1}, {"b", {{"c", Json::binary({7})}}}}};
}

TEST(Cbor, RoundTripsEveryKindOfValue) {
  for (const Json& value : samples()) {
    std::string bytes = encode(value);
    EXPECT_EQ(decode(bytes.data(), bytes.size()), value) << value.dump();
  }
}

TEST(Cbor, IsStandardCborBothWays) {
  for (const Json& value : samples()) {
    if (value.is_binary() && value.get_binary().has_subtype()) continue;  // nlohmann refuses tags
    std::string ours = encode(value);
    EXPECT_EQ(Json::from_cbor(ours), value) << value.dump();
    EXPECT_EQ(decode_bytes(Json::to_cbor(value)), value) << value.dump();
  }
}

TEST(Cbor, ReadsShorterFloatsAndUndefined) {
  EXPECT_EQ(decode_bytes({0xf9, 0x3c, 0x00}), 1.0);                 // half 1.0
  EXPECT_EQ(decode_bytes({0xf9, 0xc0, 0x00}), -2.0);                // half -2.0
  EXPECT_EQ(decode_bytes({0xf9, 0x00, 0x01}), std::ldexp(1, -24));  // smallest subnormal
  EXPECT_TRUE(std::isinf(decode_bytes({0xf9, 0x7c, 0x00}).get<double>()));
  EXPECT_TRUE(std::isnan(decode_bytes({0xf9, 0x7e, 0x00}).get<double>()));
  EXPECT_EQ(decode_bytes({0xfa, 0x3f, 0xc0, 0x00, 0x00}), 1.5);  // single 1.5
  EXPECT_EQ(decode_bytes({0xf7}), nullptr);
  EXPECT_EQ(decode_bytes({0x18, 0x05}), 5) << "a longer form than needed is still read";
}

TEST(Cbor, GarbageIsAProtocolErrorThatSaysWhere) {
  auto error_of = [](const std::vector<std::uint8_t>& bytes) -> std::string {
    try {
      decode_bytes(bytes);
    } catch (const ProtocolError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(error_of({}).find("ends inside an item"), std::string::npos);
  EXPECT_NE(error_of({0x62, 'a'}).find("past the end"), std::string::npos);
  EXPECT_NE(error_of({0x9f}).find("indefinite"), std::string::npos);
  EXPECT_NE(error_of({0x1c}).find("reserved"), std::string::npos);
  EXPECT_NE(error_of({0xa1, 0x01, 0x02}).find("map key"), std::string::npos);
  EXPECT_NE(error_of({0xc1, 0x01}).find("tag"), std::string::npos);
  EXPECT_NE(error_of({0xe0}).find("simple value"), std::string::npos);
  EXPECT_NE(error_of({0x01, 0x02}).find("bytes left"), std::string::npos);
  EXPECT_NE(error_of({0x3b, 0x80, 0, 0, 0, 0, 0, 0, 0}).find("below -2^63"), std::string::npos);
  // A count no input could hold is refused before anything is reserved for it.
  EXPECT_NE(error_of({0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}).find("items"),
            std::string::npos);
  std::vector<std::uint8_t> deep(kMaxDepth + 2, 0x81);
  deep.push_back(0x00);
  EXPECT_NE(error_of(deep).find("nested deeper"), std::string::npos);
  std::vector<std::uint8_t> ok(kMaxDepth, 0x81);
  ok.push_back(0x00);
  EXPECT_EQ(error_of(ok), "no error");
}

}  // namespace
}  // namespace kiln::internal::cbor
