"""Where a reply text quotes code in Markdown: fenced code blocks and inline code spans.

Markup of a text tool-call format (``<tool_call>``, ``[TOOL_CALLS]``,
``<|python_tag|>``, ``<function=...>``, ``[TOOL_REQUEST]``) and harmony tokens
(``<|channel|>``...) that sit inside code are *quoted*: a reply explaining a
format, not the reply's own structure. ``yiemagent.formats.text_tool_calls`` and
``yiemagent.formats.harmony`` read markup only outside the ranges ``code_ranges``
finds, so a quoted example never runs a tool and never rewrites the answer.

The one format whose own markup *is* a fence, fenced JSON (a ``json`` fence around
``{"name": ..., "arguments": ...}``), is read by its own recogniser
(registered names and an ``arguments`` key only), as before.

Rules (CommonMark 0.31, "Fenced code blocks", "Code spans"): a fence is a line
of 3+ backticks or tildes indented at most 3 spaces (a backtick fence's info
string holds no backtick); it ends at a line of the same character, at least
as long, or runs to the end of the text. Outside fences, a run of N backticks
opens a code span closed by the next run of exactly N backticks; a run with
no such partner is literal text. Linear in the length of the text.

Spec: CommonMark 0.31.2, sections 4.5 and 6.1.
"""

from __future__ import annotations

import bisect
import re

__all__ = ["CodeRanges", "code_ranges"]

_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})([^\n]*)")
_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")
_RUN = re.compile(r"`+")


class CodeRanges:
    """Sorted, disjoint ``[start, end)`` character ranges of a text that are code; ``pos in ranges`` tests one."""

    __slots__ = ("ends", "starts")

    def __init__(self, ranges: list[tuple[int, int]]) -> None:
        ranges.sort()
        self.starts = [start for start, _ in ranges]
        self.ends = [end for _, end in ranges]

    def __contains__(self, pos: object) -> bool:
        if not isinstance(pos, int):
            return False
        i = bisect.bisect_right(self.starts, pos) - 1
        return i >= 0 and pos < self.ends[i]

    def __bool__(self) -> bool:
        return bool(self.starts)

    def __repr__(self) -> str:
        return f"CodeRanges({list(zip(self.starts, self.ends, strict=True))})"


_NO_CODE = CodeRanges([])


def code_ranges(text: str) -> CodeRanges:
    """The fenced code blocks (fence lines included) and inline code spans (backticks included) of ``text``.

    Example:
        >>> ranges = code_ranges("say `<tool_call>` then <tool_call>")
        >>> 5 in ranges, 23 in ranges
        (True, False)
    """
    if "`" not in text and "~~~" not in text:
        return _NO_CODE
    ranges: list[tuple[int, int]] = []
    fence: tuple[str, int] | None = None
    fence_start = prose_start = pos = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if fence is None:
            opened = _OPEN.fullmatch(body)
            if opened is not None and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
                ranges.extend(_inline_spans(text, prose_start, pos))
                fence, fence_start = (opened.group(1)[0], len(opened.group(1))), pos
        else:
            closed = _CLOSE.fullmatch(body)
            if closed is not None and closed.group(1)[0] == fence[0] and len(closed.group(1)) >= fence[1]:
                ranges.append((fence_start, pos + len(line)))
                fence, prose_start = None, pos + len(line)
        pos += len(line)
    if fence is not None:  # an unclosed fence runs to the end of the text
        ranges.append((fence_start, len(text)))
    else:
        ranges.extend(_inline_spans(text, prose_start, len(text)))
    return CodeRanges(ranges)


def _inline_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Code spans in ``text[start:end]``: a backtick run paired with the next run of the same length."""
    runs = [(m.start(), m.end()) for m in _RUN.finditer(text, start, end)]
    following: list[int | None] = [None] * len(runs)  # index of the next run of the same length
    last: dict[int, int] = {}
    for i in range(len(runs) - 1, -1, -1):
        size = runs[i][1] - runs[i][0]
        following[i] = last.get(size)
        last[size] = i
    spans = []
    i = 0
    while i < len(runs):
        partner = following[i]
        if partner is None:
            i += 1
            continue
        spans.append((runs[i][0], runs[partner][1]))
        i = partner + 1
    return spans
