// The messages between a pool's parent and its worker templates (template.cc says what they
// say): one SOCK_SEQPACKET message each, text lines, descriptors attached with SCM_RIGHTS.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "internal/fd.h"

namespace kiln::internal {

// The most one message may take.
inline constexpr std::size_t kMaxTemplateMessage = std::size_t{128} * 1024;
// The most descriptors one message may carry.
inline constexpr std::size_t kMaxTemplateFds = 8;

std::vector<std::string> split_lines(std::string_view text);
// `head`, then each of `lines`, one per line.
std::string join_lines(const std::string& head, const std::vector<std::string>& lines);
// Sends one message with `fds` attached. False when the other side is gone.
bool send_message(int socket, const std::string& text, const std::vector<int>& fds = {});
// Receives one message and the descriptors attached to it (close-on-exec; closed when `fds` is
// null). std::nullopt at end of file or on an error.
std::optional<std::string> receive_message(int socket, std::vector<UniqueFd>* fds = nullptr);
// Whether `fd` polls readable within `limit`.
bool wait_readable(int fd, std::chrono::milliseconds limit);

}  // namespace kiln::internal
