"""Extraction + conversion cost per reply, for each supported shape, in microseconds.

    python scripts/bench_formats.py [--number N]

For each shape: ``from_openai_response`` (extraction, with tool-name gating)
plus ``to_openai`` of the resulting message, median of 5 repeats of N runs.
"""

import argparse
import json
import statistics
import timeit

from yiemagent import from_openai_response, to_openai

NAMES = {"get_weather", "get_time"}
CALL = {"city": "Lima", "days": 3}


def chat(message, finish_reason="tool_calls"):
    return {"choices": [{"index": 0, "finish_reason": finish_reason, "message": {"role": "assistant", **message}}]}


def text(content):
    return chat({"content": content}, "stop")


SHAPES = {
    "OpenAI chat tool_calls": chat({"content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps(CALL)}}]}),
    "OpenAI legacy function_call": chat({"content": None, "function_call": {"name": "get_weather",
                                                                           "arguments": json.dumps(CALL)}}),
    "OpenAI Responses output": {"object": "response", "status": "completed", "output": [
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": json.dumps(CALL)}]},
    "Anthropic tool_use": {"role": "assistant", "stop_reason": "tool_use", "content": [
        {"type": "text", "text": "Checking."}, {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                                "input": CALL}]},
    "Gemini functionCall": {"candidates": [{"content": {"parts": [{"functionCall": {"name": "get_weather",
                                                                                      "args": CALL}}]},
                                            "finishReason": "STOP"}]},
    "Ollama /api/chat": {"message": {"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": "get_weather", "arguments": CALL}}]}, "done": True},
    "bare message (LM Studio/vLLM)": {"role": "assistant", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps(CALL)}}]},
    "content blocks tool_calls": chat({"content": [{"type": "tool_calls", "tool_calls": [
        {"id": "c", "function": {"name": "get_weather", "arguments": CALL}}]}]}),
    "Hermes <tool_call> x2": text('<tool_call>{"name": "get_weather", "arguments": {"city": "Lima"}}</tool_call>'
                                  '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>'),
    "Qwen3-coder XML": text("<tool_call><function=get_weather><parameter=city>Lima</parameter>"
                            "</function></tool_call>"),
    "Mistral [TOOL_CALLS] JSON": text('[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Lima"}}]'),
    "Mistral name[ARGS]": text('[TOOL_CALLS]get_weather[ARGS]{"city": "Lima"}'),
    "Llama <|python_tag|>": text('<|python_tag|>{"name": "get_weather", "parameters": {"city": "Lima"}}'),
    "Llama bare JSON + prose": text('{"name": "get_weather", "parameters": {"city": "Lima"}}\n\nAnything else?'),
    "pythonic list": text('[get_weather(city="Lima"), get_time()]'),
    "LM Studio [TOOL_REQUEST]": text('[TOOL_REQUEST]{"name": "get_time", "arguments": {}}[END_TOOL_REQUEST]'),
    "fenced ```json": text('```json\n{"name": "get_weather", "arguments": {"city": "Lima"}}\n```'),
    "plain text answer": text("It is sunny in Lima today, 21 degrees."),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--number", type=int, default=2000)
    args = parser.parse_args()
    print(f"{'shape':32} {'calls':>5} {'extract us':>11} {'+ to_openai us':>15}")
    for name, reply in SHAPES.items():
        message = from_openai_response(reply, tool_names=NAMES)
        extract = timeit.repeat(lambda r=reply: from_openai_response(r, tool_names=NAMES), number=args.number,
                                repeat=5)
        both = timeit.repeat(lambda r=reply: to_openai(from_openai_response(r, tool_names=NAMES)),
                             number=args.number, repeat=5)
        per = 1e6 / args.number
        print(f"{name:32} {len(message.tool_calls):>5} {statistics.median(extract) * per:>11.1f} "
              f"{statistics.median(both) * per:>15.1f}")


if __name__ == "__main__":
    main()
