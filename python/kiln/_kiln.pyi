"""Type stubs of kiln._kiln, the extension module (python/src/*.cc, pybind11).

Written by hand from the bindings: one section per source file, in module.cc's order. Argument
names are the py::arg names (a lambda bound without them takes its arguments by position only);
`= ...` marks a py::arg default. What pybind11 converts: a std::filesystem::path argument takes
str, bytes or os.PathLike (StrOrBytesPath); a std::vector argument takes any sequence but str and
bytes; a std::map argument only a dict; std::optional is `| None`. Every timeout is in seconds, a
float (seconds.h), as in tvm.support.

No exception classes are registered (errors.cc): kiln's C++ errors arrive as Python's built-in
types. FileNotFound and ToolNotFound -> FileNotFoundError; ToolNotExecutable ->
PermissionError; SystemError -> the OSError subclass of its errno; InvalidArgument ->
ValueError; TimeoutError -> TimeoutError; ChildProcessError -> ChildProcessError; any other
kiln::Error (a tool that failed) -> RuntimeError. Some bindings turn one of them into
RuntimeError, as tvm.support raises it there (runtime_error.h): their comments say which.

Use kiln.support, not this module: its functions give these tvm.support's names, signatures and
defaults.
"""

from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol, TypedDict, type_check_only

from _typeshed import StrOrBytesPath
from typing_extensions import NotRequired, Unpack

# errors.cc registers an exception translator only (see the module's docstring).

# --- base.cc: paths, tar, file locks, directory removal, build information ------------------------

def which(name: str) -> str | None: ...
def is_source_path(text: str) -> bool: ...
def remove_tree(path: StrOrBytesPath) -> None:
    """shutil.rmtree(path, ignore_errors=True): never raises."""

def tar(output: StrOrBytesPath, files: Sequence[StrOrBytesPath]) -> None: ...
def untar(archive: StrOrBytesPath, directory: StrOrBytesPath) -> None: ...
def normalize_file_list_by_unpacking_tars(
    directory: StrOrBytesPath, files: Sequence[StrOrBytesPath]
) -> list[str]: ...

class FileLock:
    """An exclusive lock on the file at `path` (created when missing); the constructor blocks
    until it is held."""

    def __init__(self, path: StrOrBytesPath) -> None: ...
    def release(self) -> None: ...
    @property
    def held(self) -> bool: ...
    @property
    def path(self) -> str: ...

def libinfo() -> dict[str, str]: ...
def describe_text() -> str: ...

# kiln's settings table (kiln/settings.h; python/src/settings.cc).
def setting_flag(name: str) -> bool: ...
def setting_text(name: str) -> str | None: ...
def setting_seconds(name: str) -> float | None: ...
def setting(name: str) -> dict[str, Any]: ...
def settings() -> list[dict[str, Any]]: ...

# --- cc.cc: compilers, static libraries, symbol maps, target triples, cross compilers -------------

def get_cc() -> str | None: ...
def create_shared(
    output: StrOrBytesPath,
    objects: Sequence[StrOrBytesPath],
    options: Sequence[str],
    cc: str,
    cwd: StrOrBytesPath,
    ccache_env: dict[str, str] | None,
) -> None:
    """cc "": get_cc()'s; cwd "": this process's; ccache_env not None: through ccache (ValueError
    "ccache not found" without one)."""

def create_executable(
    output: StrOrBytesPath,
    objects: Sequence[StrOrBytesPath],
    options: Sequence[str],
    cc: str,
    cwd: StrOrBytesPath,
    ccache_env: dict[str, str] | None,
) -> None: ...
def create_staticlib(
    output: StrOrBytesPath, inputs: Sequence[StrOrBytesPath], ar: str
) -> None: ...
def get_global_symbol_section_map(path: StrOrBytesPath, nm: str) -> dict[str, str]: ...
def dump_machine(compiler: str) -> str | None:
    """`compiler -dumpmachine`'s trimmed output, or None when it fails."""

@type_check_only
class _CompileCallback(Protocol):
    """A Python compile function as cross_compiler_wrapping calls it:
    fcompile(output, objects, options=options)."""

    def __call__(self, output: str, objects: list[str], /, *, options: list[str]) -> object: ...

class CompileFunction:
    """A compile function made by cross_compiler_named or cross_compiler_wrapping (not
    constructible from Python)."""

    def __call__(
        self,
        output: StrOrBytesPath,
        objects: Sequence[StrOrBytesPath],
        options: Sequence[str] = ...,
    ) -> None: ...
    @property
    def output_format(self) -> str: ...
    @property
    def has_target_triple(self) -> bool: ...
    def get_target_triple(self) -> str | None: ...

# get_target_triple and base_triple: None, or a callable whose str result is the triple (any
# other result: unknown).
def cross_compiler_named(
    compiler: str,
    options: Sequence[str],
    output_format: str,
    get_target_triple: Callable[[], object] | None,
    add_files: Sequence[StrOrBytesPath],
) -> CompileFunction: ...
def cross_compiler_wrapping(
    base: _CompileCallback,
    base_format: str,
    base_triple: Callable[[], object] | None,
    options: Sequence[str],
    output_format: str,
    get_target_triple: Callable[[], object] | None,
    add_files: Sequence[StrOrBytesPath],
) -> CompileFunction: ...

# --- rocm.cc: ld.lld, ROCm device libraries, the AMD GPU's architecture ---------------------------

def rocm_find_lld(required: bool, llvm_major: int | None) -> list[str]:
    """RuntimeError (not FileNotFoundError) when `required` and none is found."""

def rocm_link(in_file: StrOrBytesPath, out_file: StrOrBytesPath, lld: str) -> None: ...
def rocm_callback_link(object: bytes, lld: str) -> bytes: ...
def rocm_bitcode_path(dir: StrOrBytesPath) -> list[str]:
    """dir "": the default places. RuntimeError for a missing bitcode file."""

def rocm_get_arch(rocm_path: StrOrBytesPath) -> tuple[str, str]:
    """(arch, reason): reason is "" when rocminfo named the GPU, else why "gfx900" is used."""

def rocm_find_rocm_path() -> str:
    """RuntimeError when there is no ROCm installation."""

# --- ndk.cc: the Android NDK's compiler ($TVM_NDK_CC) ---------------------------------------------

def ndk_create_shared(
    output: StrOrBytesPath, objects: Sequence[StrOrBytesPath], options: Sequence[str] | None
) -> None:
    """options None: the NDK's defaults (-shared -fPIC -lm)."""

def ndk_create_staticlib(output: StrOrBytesPath, inputs: Sequence[StrOrBytesPath]) -> None: ...
def ndk_get_global_symbol_section_map(path: StrOrBytesPath, nm: str) -> dict[str, str]: ...

# --- xcode.cc: Apple toolchains through xcrun -----------------------------------------------------

def xcode_xcrun(args: Sequence[str]) -> bytes:
    """`xcrun args...`'s output (stdout and stderr), whatever its exit status."""

def xcode_create_dylib(
    output: StrOrBytesPath,
    objects: Sequence[StrOrBytesPath],
    arch: str,
    sdk: str,
    min_os_version: str | None,
) -> None: ...
def xcode_compile_metal(
    code: str, output: StrOrBytesPath, sdk: str, min_os_version: str | None
) -> bytes:
    """The metallib's bytes (also written to `output` when it is not empty)."""

def xcode_compile_coreml(
    model: StrOrBytesPath, model_name: str, out_dir: StrOrBytesPath
) -> str:
    """RuntimeError when the compiler produced nothing."""

# --- emcc.cc: Emscripten for tvmjs ----------------------------------------------------------------

def emcc_find_wasm_lib(name: str, optional: bool, root: StrOrBytesPath) -> list[str] | None:
    """None when nothing is found and `optional`; else RuntimeError."""

def emcc_create_tvmjs_wasm(
    output: StrOrBytesPath,
    objects: Sequence[StrOrBytesPath],
    options: Sequence[str],
    cc: str,
    libs: Sequence[StrOrBytesPath],
    root: StrOrBytesPath,
) -> None:
    """RuntimeError for a missing library."""

# --- clang.cc: finding clang, LLVM IR -------------------------------------------------------------

def clang_find_clang(required: bool, llvm_major: int | None) -> list[str]:
    """RuntimeError (not FileNotFoundError) when `required` and none is found."""

def clang_create_llvm(
    inputs: Sequence[str], output: StrOrBytesPath, options: Sequence[str], cc: str
) -> str: ...

# --- cuda.cc: CUDA compiles (nvcc, NVRTC), the toolkit's parts, compute capabilities --------------

def compile_cuda(
    code: str,
    target_format: str,
    arch: str | Sequence[str],
    options: Sequence[str],
    path_target: str,
    compiler: str,
    use_cache: bool = ...,
) -> tuple[bytearray, str]:
    """(the compiled bytes, why kiln's cache was not used or ""); target_format "" is the
    backend's default."""

def uses_nvshmem(code: str) -> bool: ...
def find_cuda_path() -> str: ...
def get_cuda_version(cuda_path: str) -> tuple[int, int, int]: ...
def find_nvshmem_paths() -> tuple[str, str]: ...
def find_libdevice_path(arch: int) -> str: ...
def callback_libdevice_path(arch: int) -> tuple[str, str]:
    """(path, "") or ("", the warning to show)."""

def compute_version_of_arch(arch: str) -> str: ...
def get_target_compute_version(arch: str) -> str: ...
def device_compute_version() -> str | None: ...
def parse_compute_version(compute_version: str) -> tuple[int, int]: ...
def have_fp16(compute_version: str) -> bool: ...
def have_int8(compute_version: str) -> bool: ...
def have_tensorcore(compute_version: str) -> bool: ...
def have_bf16(compute_version: str) -> bool: ...
def have_fp8(compute_version: str) -> bool: ...
def have_fp4(compute_version: str) -> bool: ...
def have_cudagraph() -> bool: ...

# --- pool_template.cc: warm worker templates ------------------------------------------------------

@type_check_only
class TemplateStats(TypedDict):
    """template_stats()'s dict."""

    forks: int
    fallbacks: int
    started: int
    lost: int
    last_reason: str
    joined: int
    stale: int
    last_stale: str

def serve_pool_template(
    args: Sequence[str],
    prepare: Callable[[list[str]], Sequence[str]],
    sources: Callable[[], Sequence[str]] | None = ...,
) -> int | tuple[list[str], list[str]]:
    """The template's exit status; in a worker it forked, (its arguments, its environment)."""

def prepare_template(
    command: Sequence[str], names: Sequence[str], unless_elsewhere: bool = ...
) -> bool: ...
def wait_for_template(
    command: Sequence[str],
    timeout: float,
    only_if_preparing: bool = ...,
    needed: Sequence[str] = ...,
) -> bool: ...
def template_stats() -> TemplateStats: ...
def template_services(stop: bool = ...) -> list[dict[str, str]]: ...

# --- pool.cc: workers and executors running pickled Python calls ----------------------------------

@type_check_only
class WorkerOptions(TypedDict):
    """The keyword arguments of PoolWorker and PoolExecutor (worker_options in pool.cc)."""

    command: Sequence[str]
    initializer: bytes | None  # the pickled initializer call
    max_uses: int  # 0: no limit
    stdout_fd: int | None
    stderr_fd: int | None
    preparation_timeout: float | None  # seconds
    from_template: NotRequired[bool]

# How a call ended: ("ok", pickled result), ("exception", pickled exception or b"", type name,
# message), or (one of the pool's own errors, message). For type checkers only.
PoolEnd = (
    tuple[Literal["ok"], bytes]
    | tuple[Literal["exception"], bytes, str, str]
    | tuple[Literal["timeout", "died", "cancelled", "error"], str]
)

class PoolWorker:
    def __init__(self, **kwargs: Unpack[WorkerOptions]) -> None: ...
    def send(self, payload: bytes, timeout: float | None, /) -> None: ...
    def recv(self) -> PoolEnd:
        """Waits for the call's end; KeyboardInterrupt (or what a signal handler raised) leaves
        the call in flight."""

    def kill(self) -> None: ...
    def is_alive(self) -> bool: ...
    def join(self, timeout: float | None) -> None: ...
    @property
    def pid(self) -> int: ...

class PoolExecutor:
    def __init__(
        self, workers: int, timeout: float | None, **kwargs: Unpack[WorkerOptions]
    ) -> None: ...
    def submit(self, first: int, payloads: Sequence[bytes]) -> None: ...
    def collect(self) -> list[tuple[int, PoolEnd]]:
        """(index, end) of every call that ended since the last collect(), waiting for one;
        empty once shut down."""

    def shutdown(self, wait: bool) -> None: ...

def serve_pool_worker(
    args: Sequence[str],
    handler: Callable[[bytes], tuple[bool, bytes] | tuple[bool, bytes, str, str]],
) -> int | None:
    """The worker's exit status; None when this process was not started as a pool worker.
    handler(payload) returns (True, pickled result) or (False, pickled exception, type name,
    message)."""

def task_begins() -> None: ...
def task_ends_process(code: int) -> None: ...

max_message_bytes: int

def kill_child_processes(pid: int) -> int:
    """SIGKILL to every descendant of `pid`; returns how many were signalled."""
