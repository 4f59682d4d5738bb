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
// <id> covers the protocol (kProtocol), the program started as the server (its file: device,
// inode, size, modification time; from Python that is the package's kiln program, not the
// interpreter) and the NVRTC library, so a rebuilt or upgraded kiln, another venv's or another
// toolkit gets a server of its own.
//
// Never a hang: the server is a speed-up, and every way it can fail a client ends, within the
// bounds below, in a compile in the client's own process. Stuck clients cannot starve the others:
// a child reads its request within kRequestWithin, a child whose client does not take its answer
// gives up after kAnswerWithin, and a child that is answering holds no compile slot.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends.h"
#include "pool/frame.h"

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
// used (KILN_NO_SERVER is set, no program can be started as one, the cache directory is
// unusable, the server would not start, the request is over kMaxRequest) or none started on it
// within kStartedWithin: the caller compiles in its own process. Throws ChildProcessError when
// NVRTC crashed in the server, TimeoutError / Cancelled when the calling thread's RunScope
// (kiln/process.h) ran out or was cancelled.
std::optional<NvrtcAttempt> compile_in_server(const NvrtcJob& job);

// How many compiles the server runs at once: the cores, at least 2.
size_t server_slots();

// The server's main: args are {socket path, private directory}. Never returns.
[[noreturn]] void serve_nvrtc(const std::vector<std::string>& args);

// The protocol's version, part of the server's id: a client only talks to a server of its own.
inline constexpr int kProtocol = 2;
// A request (CUDA source and options) is at most 64 MiB: TVM's largest modules are ~1 MB of CUDA.
// A bigger one is compiled in the calling process; the server refuses one ({"refused": why}).
inline constexpr size_t kMaxRequest = size_t{64} << 20;
// An answer (the cubin or PTX and NVRTC's log) is at most the pool's frame limit
// (kiln::internal::kMaxFrameBytes), the one limit of the codec.
// A child reads its request within this of its start, and gives up on a client that does not
// take its answer within kAnswerWithin: a stopped or silent client frees its slot soon. A live
// client sends at once and waits for the answer, reading it as it comes.
inline constexpr std::chrono::seconds kRequestWithin{5};
inline constexpr std::chrono::seconds kAnswerWithin{10};
// The client waits this long for room in the server's backlog, and as long again from sending its
// request for a child to say {"started": true}: a server busy with other compiles (or stopped) is
// then passed by for a while, and the compile runs in the caller's process. Once started, the
// compile takes as long as it needs (a 1 MB TVM module: ~8 s on a loaded 2-core machine), bounded
// only by the caller's RunScope.
inline constexpr std::chrono::seconds kStartedWithin{10};
// Starting a server takes ~20 ms (measured: 0.4-1.2 s under ASan at a load of 10 on two cores);
// a starter that takes longer than this is killed, and the failure is remembered in the servers
// directory for kFailedStartMemory, so that other processes compile in process at once instead
// of waiting too.
inline constexpr std::chrono::seconds kServerStartWithin{10};
inline constexpr std::chrono::seconds kFailedStartMemory{60};

// The frames both sides exchange, in the pool's codec (pool/frame.h). Writes and reads wait
// until `deadline` (std::nullopt: for ever). write_frame is false when the peer went away, the
// deadline passed or the value is over the frame limit (then nothing is sent).
bool write_frame(int fd, const nlohmann::json& value,
                 std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);
struct FrameRead {
  std::optional<nlohmann::json> value;  // the frame; none on end of file or a broken frame
  bool timed_out = false;               // `deadline` passed first
  bool cancelled = false;               // `cancel_fd` polled readable first
  size_t too_large = 0;  // the frame's length, when over the decoder's limit (not read)
};
// The next frame of the connection `fd`, whose bytes `decoder` holds between calls (a read may
// take the start of the next frame too).
FrameRead read_frame(int fd, kiln::internal::FrameDecoder& decoder,
                     std::optional<std::chrono::steady_clock::time_point> deadline, int cancel_fd);

}  // namespace kiln::cuda::internal
