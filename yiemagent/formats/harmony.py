"""gpt-oss harmony format in reply text: channels to reasoning, answer and tool calls.

A server that serves gpt-oss without a harmony parser (or with a broken one)
hands the model's channel markup back as ``content``::

    <|channel|>analysis<|message|>Need the weather.<|end|>
    <|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json
    <|message|>{"city":"Paris"}<|call|>
    <|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>

``split_harmony(text)`` reads it: the ``analysis`` channel is reasoning (never
the answer), a message whose header names a recipient ``to=functions.NAME``
(in the channel part or before it; the markup is one line, cut above) is a tool call whose body is its
arguments, ``final`` (and a ``commentary`` message without a recipient, a
preamble) is the answer. Text without harmony markup is left alone, and so
are tokens quoted in Markdown code (inline code or a fenced block,
``yiemagent.formats.markdown_code``): a reply explaining the format is prose, and a
quoted call never runs. The
degraded form a server gives when it strips the special tokens but keeps
their words (``analysisWe need ...assistantfinalThe answer``) is read too,
only when the text starts with ``analysis`` and holds ``assistantfinal``.

``clean_tool_name(name)`` strips a harmony suffix leaked onto a tool name
(``get_weather<|channel|>commentary``, vLLM #32587) and a leading
``functions.``.

Spec: OpenAI harmony response format (cookbook.openai.com/articles/openai-harmony).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .markdown_code import code_ranges

__all__ = ["HarmonyReply", "clean_tool_name", "split_harmony"]

_TOKEN = re.compile(r"<\|(start|channel|message|end|call|return|constrain)\|>")
_RECIPIENT = re.compile(r"\bto=(?:functions\.)?([^\s<]+)")
_DEGRADED = re.compile(r"^\s*analysis(.*?)assistantfinal(.*)$", re.DOTALL)


@dataclass
class HarmonyReply:
    """What ``split_harmony`` read from a reply text."""

    text: str = ""
    """The answer: the ``final`` channel and recipient-less ``commentary`` preambles."""
    reasoning: str = ""
    """The ``analysis`` channel."""
    calls: list[tuple[str, str, bool]] = field(default_factory=list)
    """``(tool name, arguments text, closed)``; ``closed`` is False when the message had no end token."""


def clean_tool_name(name: str) -> str:
    """``name`` without a leaked harmony suffix (``<|channel|>...``) or ``functions.`` prefix."""
    cut = name.find("<|")
    if cut != -1:
        name = name[:cut]
    name = name.strip()
    return name[len("functions."):] if name.startswith("functions.") and len(name) > 10 else name


def split_harmony(text: str) -> HarmonyReply | None:
    """Read harmony channels in ``text``; None when ``text`` holds no harmony markup (see the module docstring)."""
    if "<|channel|>" not in text and "<|message|>" not in text:
        degraded = _DEGRADED.match(text) if "assistantfinal" in text else None
        if degraded is None:
            return None
        return HarmonyReply(text=degraded.group(2).strip(), reasoning=degraded.group(1).strip())
    codes = code_ranges(text)
    tokens = [m for m in _TOKEN.finditer(text) if m.start() not in codes]  # quoted tokens are text
    if not any(m.group(1) in ("channel", "message") for m in tokens):
        return None
    parts = [text[:tokens[0].start()]]  # [text, token, text, token, text, ...]
    for m, following in zip(tokens, [*tokens[1:], None], strict=True):
        parts += [m.group(1), text[m.end():following.start() if following is not None else len(text)]]
    reply = HarmonyReply()
    answer = [parts[0]]
    reasoning: list[str] = []
    header, channel, body, in_body = "", "", "", False
    for i in range(1, len(parts), 2):
        token, segment = parts[i], parts[i + 1]
        if in_body:
            if token in ("end", "call", "return", "start", "channel"):
                _route(reply, header, channel, body, token in ("end", "call", "return"), answer, reasoning)
                header, channel, body, in_body = "", "", "", False
                if token in ("end", "call", "return"):
                    answer.append(segment if segment.strip() else "")
                    continue
            else:  # <|message|> or <|constrain|> inside a body: kept as text
                body += f"<|{token}|>{segment}"
                continue
        if token == "message":
            body, in_body = segment, True
        elif token == "channel":
            words = segment.split()
            channel = words[0] if words else ""
            header += " " + segment
        elif token in ("start", "constrain"):
            header += " " + segment
        elif segment.strip():  # an end token outside a message: what follows is text
            answer.append(segment)
    if in_body:  # the last message ran to the end of the text (a stream cut, or no end token)
        _route(reply, header, channel, body, False, answer, reasoning)
    reply.text = "".join(answer).strip()
    reply.reasoning = "\n".join(r.strip() for r in reasoning if r.strip())
    return reply


def _route(reply: HarmonyReply, header: str, channel: str, body: str, closed: bool, answer: list[str],
           reasoning: list[str]) -> None:
    """Put one message's body where its header says."""
    recipient = _RECIPIENT.search(header)
    if recipient is not None and channel != "analysis":
        reply.calls.append((clean_tool_name(recipient.group(1)), body.strip(), closed))
    elif channel == "analysis":
        reasoning.append(body)
    else:  # final, a commentary preamble, or no channel at all
        answer.append(body)
