"""Host and cross C/C++ compilers, as tvm.support.cc, run by kiln's C++ library.

Commands are tvm.support 0.27's: ``CC [-shared -fPIC | -c] -o OUTPUT OPTIONS... OBJECTS...``, run
from an argument vector; a failing compiler raises RuntimeError("Compilation error:\\n<output>
\\nCommand line: <command>"). Where kiln differs on purpose (cross_compiler's options never
accumulate across calls; its target triple is the named compiler's, not the host's), the
docstring says so.
"""

from __future__ import annotations

import os
import sys

from .._native import native as _native

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Protocol

    from _typeshed import StrPath

    class _CompileFunction(Protocol):
        """What cross_compiler returns: ``fcompile(outputs, objects, options=None)``, with the
        attributes export_library reads."""

        output_format: str
        get_target_triple: Callable[[], str | None] | None

        def __call__(
            self,
            outputs: StrPath,
            objects: StrPath | Iterable[StrPath],
            options: Sequence[str] | None = None,
        ) -> None: ...

    class _CompileCallable(Protocol):
        """A compile function cross_compiler wraps, as kiln calls it:
        ``compile_func(output, objects, options=options)``."""

        def __call__(self, output: str, objects: list[str], /, *, options: list[str]) -> object: ...

__all__ = [
    "create_executable",
    "create_shared",
    "create_staticlib",
    "cross_compiler",
    "get_cc",
    "get_global_symbol_section_map",
    "get_target_by_dump_machine",
]


def _is_linux_like() -> bool:
    return (
        sys.platform == "darwin"
        or sys.platform.startswith("linux")
        or sys.platform.startswith("freebsd")
    )


def _is_windows_like() -> bool:
    return sys.platform == "win32"


def get_cc() -> str | None:
    """The default C/C++ compiler ($CXX, $CC, else g++, gcc, clang++, clang, c++, cc on PATH),
    or None."""
    if not _is_linux_like():
        return None
    return _native.get_cc()


def _paths(objects: StrPath | Iterable[StrPath]) -> list[str]:
    if isinstance(objects, str | os.PathLike):
        return [os.fspath(objects)]
    return [os.fspath(o) for o in objects]


def _compile(
    native_fn: Callable[[str, list[str], list[str], str, str, dict[str, str] | None], None],
    output: StrPath,
    objects: StrPath | Iterable[StrPath],
    options: Sequence[str] | None,
    cc: str | None,
    cwd: StrPath | None,
    ccache_env: Mapping[str, str] | None,
) -> None:
    if not _is_linux_like():
        raise ValueError("Unsupported platform")
    native_fn(
        os.fspath(output),
        _paths(objects),
        list(options or []),
        cc or "",
        os.fspath(cwd) if cwd else "",
        None if ccache_env is None else {str(k): str(v) for k, v in ccache_env.items()},
    )


def create_shared(
    output: StrPath,
    objects: StrPath | Iterable[StrPath],
    options: Sequence[str] | None = None,
    cc: str | None = None,
    cwd: StrPath | None = None,
    ccache_env: Mapping[str, str] | None = None,
) -> None:
    """Create a shared library: ``cc -shared -fPIC -o output options... objects...``.

    ccache_env: run through ccache with these environment variables (None: no ccache).
    """
    _compile(_native.create_shared, output, objects, options, cc, cwd, ccache_env)


def create_executable(
    output: StrPath,
    objects: StrPath | Iterable[StrPath],
    options: Sequence[str] | None = None,
    cc: str | None = None,
    cwd: StrPath | None = None,
    ccache_env: Mapping[str, str] | None = None,
) -> None:
    """Create an executable (``-shared -fPIC`` for .so/.dylib outputs, ``-c`` for .obj)."""
    _compile(_native.create_executable, output, objects, options, cc, cwd, ccache_env)


def create_staticlib(
    output: StrPath, inputs: StrPath | Iterable[StrPath], ar: str | None = None
) -> None:
    """Create a static library with ``ar -crs``; .tar inputs are unpacked first."""
    if not _is_linux_like():
        raise ValueError("Unsupported platform")
    _native.create_staticlib(os.fspath(output), _paths(inputs), ar or "")


def get_global_symbol_section_map(path: StrPath, *, nm: str | None = None) -> dict[str, str]:
    """Map each defined global symbol of `path` to its section letter (``nm -gU``)."""
    if nm is None and not _is_linux_like():
        raise ValueError("Unsupported platform")
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} does not exist")
    return dict(_native.get_global_symbol_section_map(path, nm or ""))


def get_target_by_dump_machine(compiler: str | None) -> Callable[[], str | None]:
    """A function returning ``compiler -dumpmachine``'s target triple, or None when it fails.

    kiln strips the trailing newline that tvm.support returns (TVM strips it where it reads it),
    and asks the compiler once per function: export_library calls
    ``create_shared.get_target_triple()`` on every export, and a compiler's target does not
    change while the process runs.
    """
    known: list[str | None] = []

    def get_target_triple() -> str | None:
        if not compiler:
            return None
        if not known:
            known.append(_native.dump_machine(compiler))
        return known[0]

    return get_target_triple


# Attributes of a function, which type checkers do not track (python/mypy#2087).
create_shared.output_format = (  # type: ignore[attr-defined]
    "so" if sys.platform != "win32" else "dll"
)
create_shared.get_target_triple = get_target_by_dump_machine(  # type: ignore[attr-defined]
    os.environ.get("CXX", get_cc())
)


def cross_compiler(
    compile_func: str | _CompileCallable,
    options: Sequence[str] | None = None,
    output_format: str | None = None,
    get_target_triple: Callable[[], str | None] | None = None,
    add_files: Iterable[StrPath] | None = None,
) -> _CompileFunction:
    """A compile function for export_library: `compile_func` specialized with options and files.

    compile_func is a compiler name (``"aarch64-linux-gnu-gcc"``: create_shared with that cc) or
    a function ``f(output, objects, options=None)`` such as kiln.support.ndk.create_shared. The
    result has ``output_format`` (given, else compile_func's, else "so") and ``get_target_triple``
    (given, else compile_func's; for a compiler name, that compiler's ``-dumpmachine``). Before
    linking, inputs built for another machine than the target are refused (ValueError).

    Unlike tvm.support 0.27, `options` do not grow with every call, and a compiler name's triple
    is that compiler's own (0.27 reports the host compiler's).
    """
    base_options = list(options or [])
    extra = [os.fspath(f) for f in (add_files or [])]
    if isinstance(compile_func, str):
        native = _native.cross_compiler_named(
            compile_func, base_options, output_format or "", get_target_triple, extra
        )
    else:
        native = _native.cross_compiler_wrapping(
            compile_func,
            getattr(compile_func, "output_format", None) or "",
            getattr(compile_func, "get_target_triple", None),
            base_options,
            output_format or "",
            get_target_triple,
            extra,
        )

    def _fcompile(
        outputs: StrPath,
        objects: StrPath | Iterable[StrPath],
        options: Sequence[str] | None = None,
    ) -> None:
        native(os.fspath(outputs), _paths(objects), list(options or []))

    fcompile: _CompileFunction = _fcompile  # type: ignore[assignment]  # gets its attributes here
    fcompile.output_format = native.output_format
    fcompile.get_target_triple = native.get_target_triple if native.has_target_triple else None
    return fcompile
