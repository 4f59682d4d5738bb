// libFuzzer target: the pool's frame decoder on arbitrary bytes, fed in pieces whose sizes come
// from the input too. Every value decoded must re-encode to a frame that decodes to the same
// value; anything else than a value or kiln::ProtocolError is a bug.
//
//   build/fuzz/fuzz/frame_fuzz -max_total_time=600 build/fuzz/fuzz/corpus/frame
#include <cstdint>
#include <cstdlib>

#include "kiln/error.h"
#include "pool/frame.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  size_t piece = 1 + data[0] % 64;  // the first byte chooses how the rest is split
  const char* bytes = reinterpret_cast<const char*>(data + 1);
  size_t left = size - 1;
  kiln::internal::FrameDecoder decoder(1 << 16);
  try {
    while (left > 0) {
      size_t n = piece < left ? piece : left;
      decoder.feed(bytes, n);
      bytes += n;
      left -= n;
      while (std::optional<nlohmann::json> value = decoder.next()) {
        kiln::internal::FrameDecoder again;
        std::string frame = kiln::internal::encode_frame(*value);
        again.feed(frame.data(), frame.size());
        std::optional<nlohmann::json> round_trip = again.next();
        // NaN never equals itself: compare the encodings instead of the values.
        if (!round_trip ||
            nlohmann::json::to_cbor(*round_trip) != nlohmann::json::to_cbor(*value)) {
          std::abort();
        }
      }
    }
  } catch (const kiln::ProtocolError&) {
    // The expected answer to garbage.
  } catch (const kiln::InvalidArgument&) {
    // A decoded value too large to re-encode under the default limit cannot happen (the decoder's
    // limit is smaller), but is not a decoder bug either.
  }
  return 0;
}
