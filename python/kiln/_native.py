"""The extension module kiln._kiln, and the kiln program it re-executes for its servers."""

from __future__ import annotations

import os

from . import _kiln as native  # noqa: F401  (re-exported)

__all__ = ["native", "program"]


def program() -> str | None:
    """Path of the kiln program shipped with the package (kiln/bin/kiln), or None."""
    from . import __path__ as package_path  # pylint: disable=import-outside-toplevel

    for directory in package_path:
        candidate = os.path.join(directory, "bin", "kiln")
        if os.access(candidate, os.X_OK):
            return candidate
    return None


# A Python process cannot re-execute itself as kiln's NVRTC compile server (or, later, as a pool
# worker): kiln's C++ side starts this program instead (KILN_SERVICE_PROGRAM, pool::service_command).
if "KILN_SERVICE_PROGRAM" not in os.environ and (_program := program()) is not None:
    os.environ["KILN_SERVICE_PROGRAM"] = _program
