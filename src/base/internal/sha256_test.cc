#include "internal/sha256.h"

#include <string>

#include <gtest/gtest.h>

namespace kiln::internal {
namespace {

// The examples of FIPS 180-4's companion document (NIST CSRC "SHA256.pdf") and the long-message
// vector of FIPS 180-2 appendix B.3.
TEST(Sha256, TheEmptyMessage) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, OneBlockMessage) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, TwoBlockMessageOf448Bits) {
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, MessageOf896Bits) {
  EXPECT_EQ(
      sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklm"
                 "nopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, OneMillionTimesA) {
  EXPECT_EQ(sha256_hex(std::string(1'000'000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, TheHeaderExample) {
  Sha256 hash;
  hash.update("a");
  hash.update("bc");
  EXPECT_EQ(hash.hex_digest(), sha256_hex("abc"));
}

// Every split of messages around the block (64) and padding (56) boundaries, in one, two and
// three pieces, hashes as the whole message does.
TEST(Sha256, ChunkedUpdatesEqualOneShot) {
  for (std::size_t size : {0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 200}) {
    std::string message;
    for (std::size_t i = 0; i < size; ++i) {
      message.push_back(static_cast<char>((i * 131 + 7) & 0xff));
    }
    std::string whole = sha256_hex(message);
    for (std::size_t first = 0; first <= size; ++first) {
      Sha256 two;
      two.update(std::string_view(message).substr(0, first));
      two.update(std::string_view(message).substr(first));
      ASSERT_EQ(two.hex_digest(), whole) << "size " << size << ", split at " << first;

      std::size_t second = first + (size - first) / 2;
      Sha256 three;
      three.update(std::string_view(message).substr(0, first));
      three.update(std::string_view(message).substr(first, second - first));
      three.update(std::string_view(message).substr(second));
      ASSERT_EQ(three.hex_digest(), whole)
          << "size " << size << ", splits at " << first << ", " << second;
    }
  }
}

TEST(Sha256, ByteAtATimeEqualsOneShot) {
  std::string message(1000, '\0');
  for (std::size_t i = 0; i < message.size(); ++i) {
    message[i] = static_cast<char>(i);
  }
  Sha256 hash;
  for (char c : message) {
    hash.update(std::string_view(&c, 1));
  }
  EXPECT_EQ(hash.hex_digest(), sha256_hex(message));
}

TEST(Sha256, DifferentMessagesDiffer) {
  EXPECT_NE(sha256_hex("kiln"), sha256_hex("kilN"));
  EXPECT_NE(sha256_hex(std::string(1, '\0')), sha256_hex(""));
}

}  // namespace
}  // namespace kiln::internal
