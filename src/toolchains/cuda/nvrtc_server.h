// kiln's NVRTC compile server: one per user, NVRTC library and kiln build, that keeps NVRTC
// loaded and its precompiled headers made, so that a fresh process (the CLI, a build worker, a
// Python process compiling its first kernel) compiles as fast as a warm one.
//
// Why a server, and why it forks: NVRTC 13 refuses a precompiled header (PCH) made by another
// process ("not created by the same dynamic instance of the NVRTC library"): the file holds
// addresses in NVRTC's PCH heap. Processes forked from one parent that allocated that heap
// before forking share its address, and accept each other's PCH files. So the server loads
// NVRTC, allocates the heap, and forks one child per compile; a child that finds no PCH for the
// kernel's header prefix (nvrtc_source.h) makes one, later children use it (type_traits and
// cuda_fp16.h: ~0.6 s -> ~0.05 s); which headers go into one, when it is used and which are
// kept: nvrtc_pch.h. A child that crashes or hangs takes down only its compile.
//
// Where: <kiln cache directory>/servers/nvrtc-<id>.sock (the directory is the user's own,
// 0700, checked like the cache), its PCH files and temporaries in nvrtc-<id>.d beside it, removed
// when the server ends: after KILN_SERVER_IDLE seconds (default 600) without a request, when its
// socket is removed, or on SIGTERM; when it was killed, by the next server's start or the next
// `kiln cache` command (it holds nvrtc-<id>.d.lock for its life: internal/server_directories.h).
// <id> covers the kiln program and NVRTC library (path, size,
// modification time), so a rebuilt kiln or another toolkit gets a server of its own.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "backends.h"

namespace kiln::cuda::internal {

struct NvrtcJob {
  std::string source;        // as NVRTC compiles it (nvrtc_source.h)
  size_t header_prefix = 0;  // bytes of `source` a precompiled header may stand for; 0: none
  std::string name;          // the program's name
  std::vector<std::string> options;
  bool cubin = true;  // else PTX
  // The toolkit's include directories: what the header prefix reads there is keyed by the
  // toolkit's identity, anything else by its content (nvrtc_pch.h).
  std::vector<std::string> toolkit_dirs{};
};

// Compiles `job` in the server, starting it when none runs. std::nullopt when no server can be
// used (KILN_NO_SERVER is set, this program cannot be re-executed as one, the cache directory is
// unusable, the server would not start): the caller compiles in its own process. Throws
// ChildProcessError when NVRTC crashed in the server, TimeoutError / Cancelled when the calling
// thread's RunScope (kiln/process.h) ran out or was cancelled.
std::optional<NvrtcAttempt> compile_in_server(const NvrtcJob& job);

// The server's main: args are {socket path, private directory}. Never returns.
[[noreturn]] void serve_nvrtc(const std::vector<std::string>& args);

// The framing both sides use: a 4-byte little-endian length, then CBOR (at most 1 GiB).
bool write_frame(int fd, const std::string& cbor);
struct FrameRead {
  std::optional<std::string> cbor;  // the frame; none on end of file or a broken frame
  bool timed_out = false;           // `deadline` passed first
  bool cancelled = false;           // `cancel_fd` polled readable first
};
FrameRead read_frame(int fd, std::optional<std::chrono::steady_clock::time_point> deadline,
                     int cancel_fd = -1);

}  // namespace kiln::cuda::internal
