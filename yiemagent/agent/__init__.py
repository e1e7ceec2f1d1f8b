"""The ``Agent``: a conversation served on a background thread, fed by bounded queues.

``agent`` (``Agent``, the public object, which owns and delegates to its parts), ``streaming``
(``AgentStream``, server-sent events) and ``inbox`` (closable queues, the shutdown sentinel).
"""

from typing import TYPE_CHECKING

from .._internal.lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from .agent import SHUTDOWN, Agent

_EXPORTS = {
    "SHUTDOWN": ".agent",
    "Agent": ".agent",
}

__all__ = ["SHUTDOWN", "Agent"]

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)  # each name on first use (PEP 562)
