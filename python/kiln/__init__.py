"""kiln: the toolchain-support layer of machine-learning compilers.

``kiln.support`` is a drop-in for Apache TVM's ``tvm.support`` (same modules, names, signatures,
defaults, return and exception types), run by kiln's C++ library; ``kiln.tvm.install()`` makes TVM
use it. Importing kiln imports neither TVM nor the extension module: each ``kiln.support``
module loads what it needs when it is first imported.
"""

import os as _os
import sys as _sys

__version__ = "0.1.0"


def _extend_path(path: list[str], name: str) -> list[str]:
    # A CMake build of this checkout puts the extension (kiln/_kiln*.so) and kiln/bin/kiln under
    # <build>/python/kiln/, beside no Python source: PYTHONPATH=python:<build>/python finds both
    # halves of the package (what pkgutil.extend_path does, without importing pkgutil).
    for entry in _sys.path:
        candidate = _os.path.join(entry or ".", name)
        if candidate not in path and _os.path.isdir(candidate):
            path.append(candidate)
    return path


__path__ = _extend_path(list(__path__), __name__)
