"""The command engine: durable per-key command queues, leases, retries, rollback.

The public names (`xcommands.XCommand`, `xcommands.enqueue`, `xcommands.enqueue_job` and the
exceptions commands raise) load on first use: this package is imported while Django is
still loading its apps, before models may be imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xcommands.base import XCommand
    from xcommands.errors import PermanentError, PreconditionFailed, TransientError
    from xcommands.keyed import enqueue_job
    from xcommands.queue import enqueue

_EXPORTS = {
    "XCommand": "xcommands.base",
    "PermanentError": "xcommands.errors",
    "PreconditionFailed": "xcommands.errors",
    "TransientError": "xcommands.errors",
    "enqueue": "xcommands.queue",
    "enqueue_job": "xcommands.keyed",
}

__all__ = ["PermanentError", "PreconditionFailed", "TransientError", "XCommand", "enqueue", "enqueue_job"]


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'xcommands' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
