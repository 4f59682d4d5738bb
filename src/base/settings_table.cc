// The table of kiln's settings (kiln/settings.h): adding a setting is adding a row here, reading
// it with the reader of its type where it is used, and regenerating docs/settings.md
// (`kiln settings --markdown`; the test lint.settings_docs compares them).
#include "kiln/settings.h"

namespace kiln::settings {

namespace {

using enum Type;

constexpr Setting kTable[] = {
    // --- The cache ---
    {.name = "KILN_CACHE_DIR",
     .type = path,
     .default_text = "$XDG_CACHE_HOME/kiln, else ~/.cache/kiln",
     .reader = "cache",
     .meaning = "the local cache's directory (made 0700; an existing directory kiln did not make "
                "must be empty or a kiln cache)"},
    {.name = "KILN_NO_CACHE",
     .type = flag,
     .default_value = "0",
     .reader = "cache",
     .meaning = "turns the cache off, local and remote: everything is compiled"},
    {.name = "KILN_BASE_DIR",
     .type = path,
     .default_text = "kiln build: the manifest's directory; elsewhere: the working directory",
     .reader = "cache",
     .meaning = "paths under it enter cache keys relative to it, so checkouts elsewhere share "
                "entries"},
    // --- The remote cache (docs/remote-cache.md) ---
    {.name = "KILN_REMOTE_CACHE",
     .type = url,
     .default_text = "none: no remote cache",
     .invalid_is_error = true,
     .reader = "remote cache",
     .meaning = "the remote cache's URL, of a scheme of the remote layer's registry (kiln build "
                "--help lists them; docs/remote-cache.md)"},
    {.name = "KILN_REMOTE_CACHE_MODE",
     .type = choice,
     .default_value = "read-only",
     .choices = "read-only|read-write",
     .invalid_is_error = true,
     .reader = "remote cache",
     .meaning = "read-write also stores what this machine compiles"},
    {.name = "KILN_REMOTE_CACHE_CREDENTIALS",
     .type = path,
     .default_text = "none",
     .reader = "remote cache",
     .meaning = "a file whose first line is the password, user:password or token"},
    {.name = "KILN_REMOTE_CACHE_CA",
     .type = path,
     .default_text = "the system's certificate authorities",
     .reader = "remote cache",
     .meaning = "the certificate authorities an https:// server is verified with"},
    {.name = "KILN_REMOTE_CACHE_TIMEOUT",
     .type = seconds,
     .default_value = "2",
     .minimum = 0,
     .maximum = 600,
     .minimum_open = true,
     .invalid_is_error = true,
     .reader = "remote cache",
     .meaning = "the limit of one remote operation, whole (resolving, connecting, the reply)"},
    {.name = "KILN_REMOTE_CACHE_FAULT_MEMORY",
     .type = seconds,
     .default_value = "60",
     .minimum = 0,
     .maximum = 600,
     .invalid_is_error = true,
     .reader = "remote cache",
     .meaning = "how long every process of this user skips a server that failed (0: never)"},
    // --- The NVRTC compile server and CUDA ---
    {.name = "KILN_SERVICE_PROGRAM",
     .type = path,
     .default_text = "the kiln program itself; in Python, the one installed with the package",
     .reader = "NVRTC, pool",
     .meaning = "the program that runs kiln's servers (the NVRTC compile server)"},
    {.name = "KILN_NO_SERVER",
     .type = flag,
     .default_value = "0",
     .reader = "NVRTC",
     .meaning = "compiles NVRTC programs in the calling process instead of the compile server"},
    {.name = "KILN_SERVER_IDLE",
     .type = seconds,
     .default_value = "600",
     .minimum = 0,
     .maximum = 86400,
     .minimum_open = true,
     .reader = "NVRTC",
     .meaning = "how long the NVRTC compile server waits for work before it ends"},
    {.name = "KILN_SERVER_DEBUG",
     .type = flag,
     .default_value = "0",
     .reader = "NVRTC",
     .meaning = "says on stderr why a compile goes without the server or compiles a module whole"},
    {.name = "KILN_NVRTC_SPLIT",
     .type = bytes,
     .default_value = "65536",
     .minimum = 0,
     .maximum = 1e15,
     .reader = "NVRTC",
     .meaning = "the source bytes each part of a split multi-kernel module must spare (0: never "
                "split)"},
    {.name = "KILN_NVRTC",
     .type = path,
     .default_text = "libnvrtc.so of CUDA_PATH's toolkit, else the linker's",
     .reader = "NVRTC",
     .meaning = "the NVRTC library to load"},
    {.name = "KILN_NVJITLINK",
     .type = path,
     .default_text = "libnvJitLink.so of CUDA_PATH's toolkit, else the linker's",
     .reader = "NVRTC",
     .meaning = "the nvJitLink library to load"},
    // --- The process pool ---
    {.name = "KILN_POOL_TEMPLATE",
     .type = flag,
     .default_value = "1",
     .reader = "Python pool",
     .meaning = "Python pool workers fork from warm templates; off: every worker starts fresh"},
    {.name = "KILN_POOL_DEBUG",
     .type = flag,
     .default_value = "0",
     .reader = "pool",
     .meaning = "says on stderr why a pool worker started fresh instead of from a template"},
    // --- TVM ---
    {.name = "KILN_TVM",
     .type = flag,
     .default_value = "0",
     .environment_only = true,
     .reader = "Python",
     .meaning = "installs kiln into TVM in every process that imports tvm (kiln.tvm.install())"},
    // --- The settings file itself ---
    {.name = "KILN_CONFIG",
     .type = path,
     .default_text = "$XDG_CONFIG_HOME/kiln/kiln.conf, else ~/.config/kiln/kiln.conf",
     .environment_only = true,
     .reader = "settings",
     .meaning = "the settings file: NAME=value lines, # comments, below the environment"},
};

}  // namespace

std::span<const Setting> table() { return kTable; }

}  // namespace kiln::settings
