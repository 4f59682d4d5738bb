"""kiln's settings (every KILN_* variable) for the Python package: read through kiln's one
settings table (kiln/settings.h, `kiln settings`, docs/settings.md), so that Python and C++ take
the same values, defaults and flag rule. No other module of python/kiln reads KILN_* variables
(the lint test tests/raw_settings_reads.py checks it).

flag_before_extension() is the one exception, for the startup hook: it decides whether kiln's
extension may be loaded at all (a broken install must not be), so it cannot ask the extension;
it applies the same flag rule to the environment, and a test compares it with the C++ reader.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["flag", "text", "seconds", "flag_before_extension", "FALSE_WORDS"]

# The flag rule (kiln/settings.h): unset or empty is the default, these (any case) are off,
# anything else is on.
FALSE_WORDS = ("0", "false", "no", "off")


def flag(name: str) -> bool:
    """The flag setting `name`, as kiln's C++ side reads it."""
    from . import _kiln  # pylint: disable=import-outside-toplevel

    return bool(_kiln.setting_flag(name))


def text(name: str) -> str | None:
    """The path, URL or choice setting `name` (its default when unset), None when unset without
    a default."""
    from . import _kiln  # pylint: disable=import-outside-toplevel

    value: str | None = _kiln.setting_text(name)
    return value


def seconds(name: str) -> float | None:
    """The seconds setting `name` (its default when unset)."""
    from . import _kiln  # pylint: disable=import-outside-toplevel

    value: float | None = _kiln.setting_seconds(name)
    return value


def flag_before_extension(name: str, environ: Mapping[str, str] | None = None,
                          default: bool = False) -> bool:
    """The flag `name` from `environ` (os.environ by default) by the flag rule, without loading
    kiln's extension: only for environment-only settings (KILN_TVM)."""
    value = (os.environ if environ is None else environ).get(name, "")
    if value == "":
        return default
    return value.lower() not in FALSE_WORDS
