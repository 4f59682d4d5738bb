// The outbox that writes the worker protocol's frames (frame.h) to a pipe; implemented in
// frame.cc, beside the codec whose length prefix it shares.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cbor.h"
#include "frame.h"

namespace kiln::internal {

// Frames waiting to be written to a pipe, in order. A frame appended "by reference" does not
// copy the large strings of its value (cbor::Ref): they are written from the value itself,
// which must then stay alive and unchanged until the outbox is empty or cleared.
class Outbox {
 public:
  // The protocol's messages (pool/protocol.h). Each throws InvalidArgument, leaving the outbox
  // as it was, when the frame would exceed `max_bytes`.
  void append_call(std::string_view task, const nlohmann::json& args, bool by_reference,
                   std::uint32_t max_bytes = kMaxFrameBytes);
  void append_answer(const nlohmann::json& value, bool by_reference,
                     std::uint32_t max_bytes = kMaxFrameBytes);
  // `details`: kiln::TaskError's bytes, sent when not empty. Throws InvalidArgument when the
  // frame would exceed the limit.
  void append_error(std::string_view type, std::string_view message, std::string_view details = {});
  // The worker's exit notice: its task is ending the process with exit status `code`.
  void append_exit_notice(int code);

  bool empty() const noexcept { return sent_ == bytes_.size() + referenced_; }
  // One writev(2) of what is unsent. Returns its result: bytes written, or -1 with errno set
  // (EAGAIN on a full non-blocking pipe). `guard_sigpipe`: a reader that went away gives EPIPE
  // rather than SIGPIPE.
  long write_some(int fd, bool guard_sigpipe);
  // Forgets everything, and frees the buffer if it grew large.
  void clear() noexcept;
  std::size_t capacity() const noexcept { return bytes_.capacity(); }

 private:
  template <typename Body>
  void append_framed(std::uint32_t max_bytes, bool by_reference, Body body);

  std::string bytes_;
  std::vector<cbor::Ref> refs_;
  std::size_t referenced_ = 0;  // bytes in refs_
  std::size_t sent_ = 0;        // of the stream bytes_ with refs_ inserted
};

}  // namespace kiln::internal
