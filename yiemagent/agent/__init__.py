"""The ``Agent``: a conversation served on a background thread, fed by bounded queues.

``agent`` (``Agent``, the public object, which owns and delegates to its parts), ``streaming``
(``AgentStream``, server-sent events) and ``inbox`` (closable queues, the shutdown sentinel).
"""

from .agent import SHUTDOWN, Agent

__all__ = ["SHUTDOWN", "Agent"]
