"""The extension module kiln._kiln, and the kiln program it re-executes for its servers."""

from __future__ import annotations

import os

from . import _kiln as native  # noqa: F401  (re-exported)
from .__main__ import program  # the one lookup of kiln/bin/kiln, shared with `python -m kiln`

__all__ = ["native", "program"]


# A Python process cannot re-execute itself as kiln's NVRTC compile server (or, later, as a pool
# worker): kiln's C++ side starts this program instead (KILN_SERVICE_PROGRAM, pool::service_command).
if native.setting_text("KILN_SERVICE_PROGRAM") is None and (_program := program()) is not None:
    os.environ["KILN_SERVICE_PROGRAM"] = _program
