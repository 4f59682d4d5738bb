// The messages between a pool's parent and its workers, and how a worker is started.
//
// The parent writes requests on the worker's fd 3 and reads responses on its fd 4, one frame
// (pool/frame.h) each:
//   request:  {"op": "init" | "call", "task": <name>, "args": <value>}
//   response: {"ok": <value>}  or  {"error": {"type": <type name>, "message": <text>}}
// A worker's first frame, before any request, is {"ok": "ready"}.
#pragma once

namespace kiln::internal {

// argv[1] of a re-executed worker; argv[2] is the parent's pid.
inline constexpr const char* kWorkerFlag = "--kiln-pool-worker";
inline constexpr int kRequestFd = 3;
inline constexpr int kResponseFd = 4;

}  // namespace kiln::internal
