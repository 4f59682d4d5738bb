"""What both ends of kiln.support.popen_pool's pipes share: the limit of a message, and the
call that wraps a pool's initializer (initialize).

The pool (popen_pool) refuses a call whose pickled arguments are larger, the worker
(popen_worker) a result; the worker imports this module, so it imports nothing but kiln's
extension.
"""

from __future__ import annotations

from .._native import native

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["MAX_MESSAGE_BYTES", "initialize"]

# The most a call's pickled arguments, or its pickled result, may take: one message of kiln's pool
# (kiln::pool::kMaxMessageBytes) less room for its framing.
MAX_MESSAGE_BYTES = native.max_message_bytes - 64


def initialize(function: Callable[..., object], *args: object) -> None:
    """A pool's initializer call, as a worker runs it. Its answer is read by the pool's native
    side, not by Python, so the worker tells what the initializer imported with its next task's
    answer instead, and the template learns it (popen_worker._learned)."""
    function(*args)
