"""What OpenTelemetry tracing costs per tool call (``yiemagent.loop.tracing``), with an instant model and a no-op tool.

    python scripts/bench_tracing.py [--calls 100 300] [--repeat 5]

Each run asks for N tool calls, one per turn (N+1 model calls: N+1 chat spans,
N tool spans, one agent span). Prints milliseconds per tool call (median of
the repeats) without ``instrument()``, and with it: the OpenTelemetry SDK's
``TracerProvider`` and a ``BatchSpanProcessor`` whose exporter drops the spans
(what production pays before the network), and the same with
``capture_content=True``. "added" is the difference to the run without tracing.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from typing import Any

from bench_loop import NOOP, make_model  # the same run as the loop benchmark: an instant model, a no-op tool

from yiemagent import Agent
from yiemagent.loop import tracing


def per_call_ms(calls: int) -> float:
    agent = Agent(make_model(calls), tools=[NOOP], max_turns=calls + 2, tool_execution="sequential",
                  max_repeated_calls=None)
    started = time.perf_counter()
    answer = agent.ask("go")
    elapsed = time.perf_counter() - started
    assert answer["status"] == "completed", answer
    agent.shutdown()
    return elapsed * 1000 / calls


def provider(exporter: Any = None) -> Any:
    """A ``TracerProvider`` with a ``BatchSpanProcessor`` into ``exporter`` (None: one that drops the spans)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    tp = TracerProvider()
    tp.add_span_processor(BatchSpanProcessor(exporter if exporter is not None else Drop()))
    return tp


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[100, 300])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    tp = provider()
    print(f"{'tool calls':>10} {'off':>8} {'on':>8} {'added':>8} {'on+content':>11} {'added':>8}   (ms per tool call)")
    for calls in args.calls:
        tracing.uninstrument()
        off = statistics.median(per_call_ms(calls) for _ in range(args.repeat))
        tracing.instrument(tracer_provider=tp)
        on = statistics.median(per_call_ms(calls) for _ in range(args.repeat))
        tracing.instrument(tracer_provider=tp, capture_content=True)
        content = statistics.median(per_call_ms(calls) for _ in range(args.repeat))
        tracing.uninstrument()
        print(f"{calls:>10} {off:>8.3f} {on:>8.3f} {on - off:>8.3f} {content:>11.3f} {content - off:>8.3f}")
    tp.shutdown()


if __name__ == "__main__":
    main()
