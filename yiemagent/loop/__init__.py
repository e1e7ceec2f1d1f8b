"""The agent loop: a conversation and the runs that take each input to its answer.

``conversation`` (``Conversation``: history, usage, tools, one run at a time), ``run`` (``run_turns``: one
run, model and tools in turn), ``model_turn`` (one model call), ``tool_batch`` (one batch of tool calls),
``config`` (``LoopConfig``, ``RunResult``), ``journal`` (the seam through which a run is recorded and
replayed), ``events`` (what the ``event_sink`` receives) and ``tracing`` (OpenTelemetry spans of each run).
"""

from typing import TYPE_CHECKING

from .._internal.lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from .config import LLMCall, LoopConfig, RunResult, Status, Steering, add_usage
    from .run import UsageLimits, run_turns

_EXPORTS = {
    "LLMCall": ".config",
    "LoopConfig": ".config",
    "RunResult": ".config",
    "Status": ".config",
    "Steering": ".config",
    "add_usage": ".config",
    "UsageLimits": ".run",
    "run_turns": ".run",
}

__all__ = ["LLMCall", "LoopConfig", "RunResult", "Status", "Steering", "UsageLimits", "add_usage", "run_turns"]

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)  # each name on first use (PEP 562)
