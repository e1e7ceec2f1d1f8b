"""The agent loop: a conversation and the runs that take each input to its answer.

``conversation`` (``Conversation``: history, usage, tools, one run at a time), ``run`` (``run_turns``: one
run, model and tools in turn), ``model_turn`` (one model call), ``tool_batch`` (one batch of tool calls),
``config`` (``LoopConfig``, ``RunResult``), ``journal`` (the seam through which a run is recorded and
replayed), ``events`` (what the ``event_sink`` receives) and ``tracing`` (OpenTelemetry spans of each run).
"""

from .config import LLMCall, LoopConfig, RunResult, Status, Steering, add_usage
from .run import UsageLimits, run_turns

__all__ = ["LLMCall", "LoopConfig", "RunResult", "Status", "Steering", "UsageLimits", "add_usage", "run_turns"]
