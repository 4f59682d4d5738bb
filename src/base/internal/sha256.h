// SHA-256 (FIPS 180-4, section 6.2): the content hash the remote cache names its objects by and
// verifies them with. Written from the standard's description; incremental, no allocation per
// byte. Not a password hash and not constant-time: it only names and checks content.
//
//   kiln::internal::Sha256 hash;
//   hash.update("a");
//   hash.update("bc");
//   std::string hex = hash.hex_digest();  // == sha256_hex("abc") == "ba7816bf...15ad"
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::internal {

// An incremental SHA-256. update() any number of times, then hex_digest() once; after that the
// object holds the padded state and must not be updated again (reassign `Sha256{}` to reuse it).
// Not thread-safe; copyable (a copy continues independently).
class Sha256 {
 public:
  Sha256() noexcept;

  // Appends `bytes` to the message.
  void update(std::string_view bytes) noexcept;

  // The digest of everything updated so far, as 64 lowercase hex digits. Finishes the hash.
  std::string hex_digest();

 private:
  void compress(const unsigned char* block) noexcept;

  std::array<std::uint32_t, 8> state_;
  std::array<unsigned char, 64> buffer_{};
  std::size_t buffered_ = 0;         // bytes waiting in buffer_ (always < 64)
  std::uint64_t message_bytes_ = 0;  // total length of the message so far
};

// The SHA-256 of `bytes` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view bytes);

}  // namespace kiln::internal
