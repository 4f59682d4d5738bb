// The messages between a pool's parent and its workers, and how a worker is started.
//
// The parent writes requests on the worker's fd 3 and reads answers on its fd 4, one frame
// (pool/frame.h) each, CBOR arrays:
//   request: [task name, args]            (an initializer is a request like any other)
//   answer:  [true, result]  or  [false, exception type name, message]  or
//            [false, exception type name, message, details (a byte string: kiln::TaskError's)]
//   exit notice: [null, exit status]: the call's task is ending the worker's process
//            (pool::task_ends_process); nothing follows it, and the parent kills the worker.
// A worker's first frame, before any request, is [true, "ready"]. The parent may send several
// requests before the first answer arrives; the worker answers them in order, each as soon as
// it is done.
#pragma once

#include <chrono>

namespace kiln::internal {

// argv[1] of a re-executed worker; argv[2] is the parent's pid. A worker started from a command
// (WorkerOptions::command) gets both as its last two arguments.
inline constexpr const char* kWorkerFlag = "--kiln-pool-worker";
// argv[1] of a program re-executed as a service (pool.h, service_command).
inline constexpr const char* kServiceFlag = "--kiln-service";
// The last two arguments of a worker template (pool.h, prepare_template): this flag and the
// parent's pid. Its control socket (SOCK_SEQPACKET, pool/template.cc) is its fd 3.
inline constexpr const char* kTemplateFlag = "--kiln-pool-template";
inline constexpr int kTemplateFd = 3;
inline constexpr int kRequestFd = 3;
inline constexpr int kResponseFd = 4;
// Where the parent hands down the worker's BeginBoard (pool/begin_board.h).
inline constexpr int kBoardFd = 5;
// How long either side polls for the other before it sleeps, when the other typically answers
// sooner (a worker sent call after call; a Worker awaiting a quick call): waking a sleeping CPU
// costs tens of microseconds on a virtual machine (internal::spin_until_readable).
inline constexpr std::chrono::microseconds kSpin{100};

}  // namespace kiln::internal
