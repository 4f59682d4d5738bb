// The messages between a pool's parent and its worker templates.
#include "template_messages.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace kiln::internal {

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    lines.emplace_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return lines;
}

std::string join_lines(const std::string& head, const std::vector<std::string>& lines) {
  std::string text = head;
  for (const std::string& line : lines) text += '\n' + line;
  return text;
}

bool send_message(int socket, const std::string& text, const std::vector<int>& fds) {
  iovec data{const_cast<char*>(text.data()), text.size()};  // NOLINT: sendmsg does not write
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * std::max<std::size_t>(fds.size(), 1)));
  if (!fds.empty()) {
    message.msg_control = control.data();
    message.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(header), fds.data(), sizeof(int) * fds.size());
  }
  return retry_eintr([&] { return ::sendmsg(socket, &message, MSG_NOSIGNAL); }) ==
         static_cast<long>(text.size());
}

std::optional<std::string> receive_message(int socket, std::vector<UniqueFd>* fds) {
  std::string text(kMaxTemplateMessage, '\0');
  iovec data{text.data(), text.size()};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * kMaxTemplateFds));
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control.data();
  message.msg_controllen = control.size();
  long got = retry_eintr([&] { return ::recvmsg(socket, &message, MSG_CMSG_CLOEXEC); });
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
       header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    std::size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    std::vector<int> received(count);
    std::memcpy(received.data(), CMSG_DATA(header), sizeof(int) * count);
    for (int fd : received) {
      if (fds != nullptr) {
        fds->emplace_back(fd);
      } else {
        ::close(fd);
      }
    }
  }
  if (got <= 0 || (message.msg_flags & MSG_TRUNC) != 0) return std::nullopt;
  text.resize(static_cast<std::size_t>(got));
  return text;
}

bool wait_readable(int fd, std::chrono::milliseconds limit) {
  pollfd entry{fd, POLLIN, 0};
  return poll_until(&entry, 1, std::chrono::steady_clock::now() + limit) > 0 && entry.revents != 0;
}

}  // namespace kiln::internal
