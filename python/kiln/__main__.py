"""``python -m kiln`` and the ``kiln`` console script: the kiln program shipped in the package.

The program is kiln/bin/kiln beside this file (or, in a CMake build of the checkout, in
<build>/python/kiln/bin/). It replaces this process (exec), so its exit status, signals and
terminal are the caller's, and no Python process waits behind it.
"""

from __future__ import annotations

import os
import sys


def program() -> str | None:
    """Path of the kiln program shipped with the package (kiln/bin/kiln), or None."""
    from . import __path__ as package_path  # pylint: disable=import-outside-toplevel

    for directory in package_path:
        candidate = os.path.join(directory, "bin", "kiln")
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def main() -> None:
    """Runs the kiln program with this process's arguments."""
    from . import __path__ as package_path  # pylint: disable=import-outside-toplevel

    path = program()
    if path is None:
        searched = ", ".join(package_path)
        raise SystemExit(f"kiln: error: the kiln program is not in this package ({searched})")
    os.execv(path, ["kiln", *sys.argv[1:]])


if __name__ == "__main__":
    main()
