"""Constrained tool calls: small local models call tools through a JSON schema, not ``tools``.

Models of a few hundred million parameters (SmolLM2-135M, Gemma 3 270M) ignore
the ``tools`` field or write broken calls. A server with constrained decoding
(llama.cpp's ``response_format: {"type": "json_schema", ...}``, also vLLM's)
can force the reply to be exactly one call of an offered tool, its
``arguments`` valid for that tool's schema (``enum`` values included), or a
plain answer. ``ConstrainedToolCalls`` wraps an ``OpenAIChat`` to do that:

- While tools are offered and fewer than ``max_tool_rounds`` tool rounds
  followed the last user message, the request carries no ``tools``; the system
  message holds the tools (``describe_tools``), the ``examples`` and the
  instruction, and ``response_format`` is the JSON schema ``{"anyOf":
  [{"name": <const>, "arguments": <parameters>}, ...]}``, plus ``{"name":
  "final_answer", "arguments": {}}`` when an example shows it
  (``offer_final_answer``). A call reply is turned into an OpenAI ``tool_calls``
  reply. ``final_answer`` (no tool fits: "What is 2 + 2?") is followed at once
  by an answer turn with no tool result, whose text is the reply; so is a call
  whose ``enum`` argument is not written in the question (``grounded_enums``:
  "What is 2 + 2?" -> ``get_time(city="London")``). ``allow_answer=False``
  leaves both out, so that every reply is a call of a tool.
- Otherwise (the answer turn) the request carries no tools and no schema, and
  the history is written the way such models answer best: each question with
  the tool results that followed it in one user turn (``Question: ...`` /
  ``Tool get_weather answered: ...``), under ``ANSWER_INSTRUCTION`` alone.
  The answer streams through ``on_delta``.
- The system prompt goes only into answers without a tool (after
  ``final_answer``, or when no tools are offered), with ``DIRECT_INSTRUCTION``.
  In call turns it tipped SmolLM2-135M towards ``final_answer`` (10 of 10
  weather questions answered without a tool, with ``final_answer`` examples);
  in the answer after a tool result, wherever it was placed (system message
  before or after the instruction, user turn before or after the question),
  2 to 7 of 18 answers stated the tool's result (three prompts, six
  questions), against 18 of 18 without it. ``system_prompt_everywhere=True``
  sends it in every turn.

The agent's history stays in OpenAI form: only what is sent changes.

Limits: one call per reply (no parallel calls); ``max_tool_rounds`` rounds per
user message (default 1: call, then answer); the server must support
``response_format`` with a JSON schema (llama.cpp, vLLM; OpenAI's own
structured outputs reject a top-level ``anyOf``). Tool choice of a 135M model
is poor without ``examples``; with a few it is good (``scripts/demo_score.py``
measures it).

Spec: OpenAI Chat Completions (``response_format``, ``tool_calls``);
llama.cpp server README ("JSON schema" constrained output).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from .._internal.jsonload import loads_bounded
from ..exceptions import ConfigError
from ..tools.schema_checks import json_pointer

__all__ = [
    "ANSWER_INSTRUCTION",
    "ANSWER_TOOL",
    "CALL_INSTRUCTION",
    "DIRECT_INSTRUCTION",
    "ConstrainedToolCalls",
    "grammar_schema",
    "tool_call_schema",
]

logger = logging.getLogger("yiemagent.models.constrained")

ANSWER_INSTRUCTION = "Answer the user's question in one sentence, using the tool result."
"""System message of the answer turn (after the tool results)."""

CALL_INSTRUCTION = 'Reply with one tool call as JSON: {"name": ..., "arguments": {...}}.'
"""Last line of the system message of a call turn (no ``final_answer`` offered)."""

DIRECT_INSTRUCTION = "Answer the user's question in one short sentence. If you do not know, say so."
"""Last line of the system message of an answer turn without tool results (after the system prompt)."""

ANSWER_TOOL = "final_answer"
"""The plain-answer option of the call schema: ``{"name": "final_answer", "arguments": {}}`` (smolagents'
name for its answer tool) means "no tool fits: answer in words". An offered tool of that name is called
as usual instead."""

CALL_OR_ANSWER_INSTRUCTION = ('Reply with one tool call as JSON: {"name": ..., "arguments": {...}}; '
                              f'when no tool fits, call {ANSWER_TOOL}.')
"""Last line of the system message of a call turn that offers ``final_answer``."""



def tool_call_schema(tools: Sequence[dict[str, Any]], *, answer: bool = False) -> dict[str, Any]:
    """The JSON schema of one call of one of ``tools`` (OpenAI function tools), or of a plain answer.

    Returns:
        One option per tool, in order,
        ``{"anyOf": [{"type": "object", "properties": {"name": {"const": name},
        "arguments": parameters}, "required": ["name", "arguments"],
        "additionalProperties": False}, ...]}``; with ``answer=True`` (and no tool named
        ``ANSWER_TOOL``) one more, last: the call ``{"name": "final_answer", "arguments": {}}``.

    Example:
        >>> tool_call_schema([{"type": "function", "function": {"name": "now", "parameters": {"type": "object"}}}])
        ... # doctest: +NORMALIZE_WHITESPACE
        {'anyOf': [{'type': 'object', 'properties': {'name': {'const': 'now'}, 'arguments': {'type': 'object'}},
          'required': ['name', 'arguments'], 'additionalProperties': False}]}
    """
    options = []
    definitions: dict[str, Any] = {}
    for index, entry in enumerate(tools):
        fn = entry.get("function") or {}
        parameters = grammar_schema(fn.get("parameters") or {"type": "object", "properties": {}})
        if _has_refs(parameters):  # refs point into this tool's own schema: move it under $defs, refs rewritten
            key = f"tool{index}"
            definitions[key] = _rebase_refs(parameters, f"#/$defs/{key}")
            parameters = {"$ref": f"#/$defs/{key}"}
        options.append({
            "type": "object",
            "properties": {"name": {"const": fn.get("name", "")}, "arguments": parameters},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        })
    if answer and not any((entry.get("function") or {}).get("name") == ANSWER_TOOL for entry in tools):
        options.append({
            "type": "object",
            "properties": {"name": {"const": ANSWER_TOOL},
                           "arguments": {"type": "object", "properties": {}, "additionalProperties": False}},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        })
    schema: dict[str, Any] = {"anyOf": options}
    if definitions:
        schema["$defs"] = definitions
    return schema


MAX_GRAMMAR_ENUM = 64
"""An ``enum`` with more values is left out of the grammar (llama.cpp builds one rule per value)."""
MAX_GRAMMAR_COUNT = 256
"""``minLength``/``maxLength``/``minItems``/``maxItems``/``minProperties``/``maxProperties`` above it are left out
(llama.cpp writes each repetition out)."""
_COUNTS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
_NOT_IN_GRAMMAR = ("pattern", "patternProperties", "format", "$schema", "$id", "$anchor", "$dynamicRef",
                   "$dynamicAnchor", "$recursiveRef", "$comment")
_DATA_KEYS = frozenset({"enum", "const", "default", "examples"})


def grammar_schema(parameters: Any, *, max_nodes: int = 20_000) -> dict[str, Any]:
    """A copy of a tool's ``parameters`` that a grammar builder turns into a small grammar quickly.

    Only loosens (the arguments are validated against the tool's own schema
    afterwards): ``pattern``/``patternProperties``/``format`` are left out (an
    invalid or nested regex makes llama.cpp answer HTTP 400 for every tool,
    llama.cpp #25895 and #19051); enums over ``MAX_GRAMMAR_ENUM`` values and counts
    over ``MAX_GRAMMAR_COUNT`` are left out (a 50,000-value enum took minutes to
    build, and ``LocalModel.stop()`` waited for it); refs that do not resolve
    inside the schema become "anything". Past ``max_nodes`` nodes, or for a value
    that is not a schema, the tool takes any object. Never raises.
    """
    if not isinstance(parameters, dict):
        return {"type": "object"}
    budget = [max_nodes]

    def copy(node: Any, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0 or depth > 64:
            raise OverflowError
        if isinstance(node, list):
            return [copy(item, depth + 1) for item in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _NOT_IN_GRAMMAR:
                continue
            if key == "enum" and isinstance(value, list) and len(value) > MAX_GRAMMAR_ENUM:
                continue
            if key in _COUNTS and (not isinstance(value, int) or value > MAX_GRAMMAR_COUNT):
                continue
            out[key] = value if key in _DATA_KEYS else copy(value, depth + 1)
        return out

    try:
        result: dict[str, Any] = copy(parameters, 0)
    except (OverflowError, RecursionError):
        logger.warning("tool schema too large for a grammar; its arguments are constrained to any object")
        return {"type": "object"}
    for node in _schema_nodes(result):
        ref = node.get("$ref")
        if isinstance(ref, str) and not _resolves(result, ref):
            del node["$ref"]
    return result


def _schema_nodes(root: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            found.append(node)
            stack.extend(v for k, v in node.items() if k not in _DATA_KEYS)
    return found


def _resolves(root: dict[str, Any], ref: str) -> bool:
    try:
        return isinstance(json_pointer(root, ref), (dict, bool))
    except LookupError:
        return False


def _has_refs(schema: dict[str, Any]) -> bool:
    return any(isinstance(node.get("$ref"), str) for node in _schema_nodes(schema))


def _rebase_refs(schema: dict[str, Any], base: str) -> dict[str, Any]:
    """``schema`` with each local ``$ref`` ``#/...`` rewritten to ``<base>/...`` (in place; returned)."""
    for node in _schema_nodes(schema):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            node["$ref"] = base + ref[1:].rstrip("/") if ref not in ("#", "#/") else base
    return schema


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _tool_lines(tools: Sequence[dict[str, Any]]) -> list[str]:
    lines = ["Tools:"]
    for entry in tools:
        fn = entry.get("function") or {}
        properties = (fn.get("parameters") or {}).get("properties") or {}
        arguments = ", ".join(f"{name}: {spec.get('type', 'any')}" for name, spec in properties.items()
                              if isinstance(spec, dict))
        lines.append(f"- {fn.get('name')}({arguments}): {' '.join(str(fn.get('description') or '').split())}")
    return lines


class ConstrainedToolCalls:
    """An ``llm_call`` that makes a small model call tools through a JSON schema (see the module docstring).

    Args:
        llm_call: an ``OpenAIChat`` (anything whose call accepts ``response_format=`` and ``on_delta=``).
        examples: ``(question, tool name, arguments)`` triples shown to the model in the call turns as
            ``User: <question>`` / ``Call: {"name": ..., "arguments": ...}``; with ``allow_answer``,
            ``(question, "final_answer", {})`` shows a question that no tool fits.
        max_tool_rounds: tool rounds per user message before the model must answer in text.
        describe_tools: list the tools (name, argument names and types, description) in the system message.
        allow_answer: the model may answer without a tool (``final_answer``, ``grounded_enums``); False
            forces a call of some tool for every user message.
        offer_final_answer: the call schema offers ``final_answer`` beside the calls (with ``allow_answer``).
            None (the default): only when an example shows it; without such an example SmolLM2-135M chose
            it for every question, weather ones included (3 of 3), so only ``grounded_enums`` applies.
        system_prompt_everywhere: send the system prompt in call turns and in answer turns after tool
            results too; by default it goes only into answers without a tool (with it elsewhere,
            SmolLM2-135M stopped calling tools or ignored their results; see the module docstring).
        grounded_enums: with ``allow_answer``, a call is made only if each of its string arguments whose
            schema is an ``enum`` names a value written in the conversation since the last user message
            (case-insensitive); else the model answers without a tool. A 135M model forced to call
            "calls" ``get_time(city="London")`` for "What is 2 + 2?": the enum makes the value valid,
            this check makes it grounded.

    Raises:
        ConfigError: ``max_tool_rounds`` is not a positive int, or an example is malformed.
    """

    def __init__(
        self,
        llm_call: Callable[..., dict[str, Any]],
        *,
        examples: Sequence[tuple[str, str, dict[str, Any]]] = (),
        max_tool_rounds: int = 1,
        describe_tools: bool = False,
        allow_answer: bool = True,
        offer_final_answer: bool | None = None,
        system_prompt_everywhere: bool = False,
        grounded_enums: bool = True,
    ) -> None:
        if not callable(llm_call):
            raise ConfigError(f"llm_call must be callable, not {type(llm_call).__name__}")
        if isinstance(max_tool_rounds, bool) or not isinstance(max_tool_rounds, int) or max_tool_rounds < 1:
            raise ConfigError(f"max_tool_rounds must be an int >= 1, not {max_tool_rounds!r}")
        for example in examples:
            if not (isinstance(example, tuple) and len(example) == 3 and isinstance(example[0], str)
                    and isinstance(example[1], str) and isinstance(example[2], dict)):
                raise ConfigError(f"an example is (question, tool name, arguments dict), not {example!r}")
        self.llm_call = llm_call
        self.examples = list(examples)
        self.max_tool_rounds = max_tool_rounds
        self.describe_tools = describe_tools
        self.allow_answer = allow_answer
        self.offer_final_answer = allow_answer and (
            any(example[1] == ANSWER_TOOL for example in self.examples) if offer_final_answer is None
            else offer_final_answer)
        self.system_prompt_everywhere = system_prompt_everywhere
        self.grounded_enums = grounded_enums
        self._ids = 0

    def __repr__(self) -> str:
        return f"ConstrainedToolCalls({self.llm_call!r}, max_tool_rounds={self.max_tool_rounds})"

    def cancel(self) -> None:
        """Cut the requests in flight (``Agent.abort()`` calls this)."""
        cancel = getattr(self.llm_call, "cancel", None)
        if callable(cancel):
            cancel()

    def close(self) -> None:
        """Close the wrapped ``llm_call``."""
        close = getattr(self.llm_call, "close", None)
        if callable(close):
            close()

    def __call__(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, on_delta: Any = None
    ) -> dict[str, Any]:
        """One model call: a constrained tool call, or the text answer (see the module docstring)."""
        if tools and _rounds_since_user(messages) < self.max_tool_rounds:
            return self._call(messages, tools, on_delta)
        return self.llm_call(self.answer_messages(messages), [], on_delta=on_delta)

    # ------------------------------------------------------------------ call turns

    def call_messages(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """What is sent for a call turn: a system message with tools and examples, the history as text."""
        lines = [_text(m.get("content")) for m in messages if m.get("role") == "system"] \
            if self.system_prompt_everywhere else []
        if self.describe_tools:
            lines += _tool_lines(tools)
        if self.examples:
            lines.append("Examples:")
            for example in self.examples:
                question, name, arguments = example
                lines += [f"User: {question}", "Call: " + json.dumps({"name": name, "arguments": arguments})]
        lines.append(CALL_OR_ANSWER_INSTRUCTION if self.offer_final_answer else CALL_INSTRUCTION)
        out: list[dict[str, Any]] = [{"role": "system", "content": "\n".join(line for line in lines if line)}]
        names = _call_names(messages)
        for message in messages:
            role = message.get("role")
            if role == "user":
                out.append({"role": "user", "content": _text(message.get("content"))})
            elif role == "assistant":
                calls = message.get("tool_calls") or []
                text = "\n".join(json.dumps({"name": c["function"]["name"],
                                             "arguments": _arguments(c["function"].get("arguments"))})
                                 for c in calls) or _text(message.get("content"))
                out.append({"role": "assistant", "content": text})
            elif role == "tool":
                name = names.get(str(message.get("tool_call_id")), "tool")
                out.append({"role": "user", "content": f"Tool {name} answered: {_text(message.get('content'))}"})
        return out

    def _call(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], on_delta: Any) -> dict[str, Any]:
        schema = tool_call_schema(tools, answer=self.offer_final_answer)
        response_format = {"type": "json_schema", "json_schema": {"name": "tool_call", "schema": schema}}
        reply = self.to_tool_calls(
            self.llm_call(self.call_messages(messages, tools), [], response_format=response_format), tools)
        if self.allow_answer and ANSWER_TOOL not in _names(tools):
            reason = "it chose final_answer" if _called(reply) == ANSWER_TOOL else \
                (_ungrounded(reply, tools, messages) if self.grounded_enums else None)
            if reason:
                logger.info("no tool call (%s): the model answers without a tool", reason)
                return self.llm_call(self.answer_messages(messages), [], on_delta=on_delta)
        return reply

    def to_tool_calls(self, reply: dict[str, Any], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """Turn a constrained reply (``{"name", "arguments"}`` JSON in ``content``) into a ``tool_calls`` reply.

        A reply that is not such JSON (cut by ``max_tokens``, a server that ignored the schema) is
        returned unchanged: the loop's own text recognisers and its ``finish_reason`` rules apply.
        """
        choices = reply.get("choices")
        if not (isinstance(choices, list) and choices and isinstance(choices[0], dict)):
            return reply
        message = choices[0].get("message") or {}
        try:
            call = loads_bounded(_text(message.get("content")))
        except ValueError:
            return reply
        known = _names(tools)
        if not (isinstance(call, dict) and call.get("name") in known and isinstance(call.get("arguments"), dict)):
            return reply
        self._ids += 1
        tool_call = {"id": f"call_c{self._ids}", "type": "function",
                     "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])}}
        choice = {**choices[0], "finish_reason": "tool_calls",
                  "message": {"role": "assistant", "content": None, "tool_calls": [tool_call]}}
        return {**reply, "choices": [choice, *choices[1:]]}

    # ------------------------------------------------------------------ answer turns

    def answer_messages(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """What is sent for an answer turn: each question with its tool results in one user turn.

        The system message is ``ANSWER_INSTRUCTION`` when tools were called since the last user
        message (with the system prompt before it only if ``system_prompt_everywhere``), else the system
        prompt alone (no system message when there is none).
        """
        prompt = [line for line in (_text(m.get("content")) for m in messages if m.get("role") == "system") if line]
        if _rounds_since_user(messages):
            lines = [*(prompt if self.system_prompt_everywhere else []), ANSWER_INSTRUCTION]
        else:
            lines = [*prompt, DIRECT_INSTRUCTION]
        out: list[dict[str, Any]] = [{"role": "system", "content": "\n".join(lines)}] if lines else []
        names = _call_names(messages)
        for message in messages:
            role = message.get("role")
            if role == "user":
                out.append({"role": "user", "content": _text(message.get("content"))})
            elif role == "tool":
                name = names.get(str(message.get("tool_call_id")), "tool")
                last = out[-1] if out else {"role": "", "content": ""}
                if last["role"] == "user" and not last["content"].startswith("Question: "):
                    last["content"] = f"Question: {last['content']}"
                line = f"Tool {name} answered: {_text(message.get('content'))}"
                if last["role"] == "user":
                    last["content"] = f"{last['content']}\n{line}"
                else:
                    out.append({"role": "user", "content": line})
            elif role == "assistant" and not message.get("tool_calls") and _text(message.get("content")):
                out.append({"role": "assistant", "content": _text(message.get("content"))})
        return out


def _rounds_since_user(messages: list[dict[str, Any]]) -> int:
    rounds = 0
    for message in reversed(messages):
        if message.get("role") == "user":
            break
        if message.get("role") == "assistant" and message.get("tool_calls"):
            rounds += 1
    return rounds


def _names(tools: Sequence[dict[str, Any]]) -> set[Any]:
    return {(t.get("function") or {}).get("name") for t in tools}


def _ungrounded(reply: dict[str, Any], tools: Sequence[dict[str, Any]], messages: list[dict[str, Any]]) -> str | None:
    """What makes the call in ``reply`` ungrounded, or None (grounded, or no call).

    A call is ungrounded when one of its ``enum`` string arguments is not in the text since the last user
    message (that message and any tool results after it), case-insensitive.
    """
    choices = reply.get("choices") or [{}]
    calls = ((choices[0].get("message") or {}).get("tool_calls") or []) if isinstance(choices[0], dict) else []
    start = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=0)
    text = " ".join(_text(m.get("content")) for m in messages[start:] if m.get("role") in ("user", "tool")).lower()
    schemas = {(t.get("function") or {}).get("name"): (t.get("function") or {}).get("parameters") or {} for t in tools}
    for call in calls:
        name = call["function"]["name"]
        properties = schemas.get(name, {}).get("properties") or {}
        for key, value in _arguments(call["function"].get("arguments")).items():
            spec = properties.get(key)
            if isinstance(spec, dict) and isinstance(spec.get("enum"), list) and isinstance(value, str) \
                    and value.lower() not in text:
                return f"{name}({key}={value!r}): {value!r} is not in the question"
    return None


def _called(reply: dict[str, Any]) -> Any:
    """The ``name`` of the JSON call in a constrained reply's content, or None."""
    choices = reply.get("choices")
    if not (isinstance(choices, list) and choices and isinstance(choices[0], dict)):
        return None
    try:
        call = loads_bounded(_text((choices[0].get("message") or {}).get("content")))
    except ValueError:
        return None
    return call.get("name") if isinstance(call, dict) else None


def _call_names(messages: list[dict[str, Any]]) -> dict[str, str]:
    return {str(c.get("id")): str(c["function"]["name"]) for m in messages if m.get("role") == "assistant"
            for c in m.get("tool_calls") or [] if isinstance(c, dict) and isinstance(c.get("function"), dict)}


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return loads_bounded(raw)
        except ValueError:
            return {}
    return raw if isinstance(raw, dict) else {}
