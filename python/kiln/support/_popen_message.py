"""The one limit both ends of kiln.support.popen_pool's pipes keep to: the size of a message.

The pool (popen_pool) refuses a call whose pickled arguments are larger, the worker
(popen_worker) a result; the worker imports this module, so it imports nothing but kiln's
extension.
"""

from __future__ import annotations

from .._native import native

__all__ = ["MAX_MESSAGE_BYTES"]

# The most a call's pickled arguments, or its pickled result, may take: one message of kiln's pool
# (kiln::pool::kMaxMessageBytes) less room for its framing.
MAX_MESSAGE_BYTES = native.max_message_bytes - 64
