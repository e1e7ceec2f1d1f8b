"""Unit tests of ``yiemagent.formats.sse.SSEParser`` (pure; no I/O).

Spec: WHATWG HTML "Server-sent events", "Event stream interpretation".
"""

from __future__ import annotations

import codecs
import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from yiemagent.formats.sse import MAX_RETRY_MS, SSEEvent, SSEParser


def feed_all(chunks: list[str]) -> list[SSEEvent]:
    parser = SSEParser()
    events: list[SSEEvent] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    return events + parser.close()


def test_lf_terminated_event_is_dispatched_at_its_blank_line():
    """Spec: LF ends a line; a blank line dispatches the event, default type ``message``."""
    parser = SSEParser()
    assert parser.feed("data: hello\n") == []
    assert parser.feed("\n") == [SSEEvent(event="message", data="hello")]


def test_crlf_terminated_events_are_dispatched_like_lf():
    """Spec: CRLF ends a line (the Python MCP SDK sends CRLF)."""
    events = SSEParser().feed('event: message\r\ndata: {"a": 1}\r\n\r\ndata: two\r\n\r\n')
    assert events == [SSEEvent(event="message", data='{"a": 1}'), SSEEvent(event="message", data="two")]


def test_cr_alone_ends_a_line():
    """Spec: a lone CR ends a line at once, even at the end of a chunk (a LF that follows in the next chunk
    is skipped as the rest of a CRLF), so the event ends without waiting for more bytes.
    """
    parser = SSEParser()
    assert parser.feed("data: one\r\rdata: two\r") == [SSEEvent(data="one")]
    assert parser.feed("\r") == [SSEEvent(data="two")]
    assert parser.feed("\ndata: three\n\n") == [SSEEvent(data="three")]
    assert parser.close() == []


def test_crlf_split_across_two_chunks_is_one_line_ending_not_two():
    """Spec: CR then LF in the next chunk is one CRLF, so it must not also end the event early."""
    parser = SSEParser()
    assert parser.feed("data: a\r") == []
    assert parser.feed("\ndata: b\r") == []
    assert parser.feed("\n\r") == [SSEEvent(data="a\nb")]  # the blank line ends at its CR
    assert parser.feed("\n") == []  # ...and its LF is the rest of that CRLF, not another blank line
    assert parser.feed("data: c\n\n") == [SSEEvent(data="c")]


def test_multi_line_data_is_joined_with_lf():
    """Spec: several ``data`` lines make one event whose data joins them with LF."""
    events = SSEParser().feed("data: first\ndata: second\ndata:third\n\n")
    assert [e.data for e in events] == ["first\nsecond\nthird"]


def test_only_one_leading_space_is_removed_from_a_value():
    """Spec: exactly one space after the colon is dropped; further spaces belong to the value."""
    assert SSEParser().feed("data:   indented\n\n") == [SSEEvent(data="  indented")]


def test_comment_lines_and_unknown_fields_are_ignored():
    """Spec: lines starting with ``:`` are comments (keep-alives); unknown fields are ignored."""
    parser = SSEParser()
    assert parser.feed(": keep-alive\n\n") == []
    assert parser.feed(": note\nfoo: bar\ndata: x\n: between\n\n") == [SSEEvent(data="x")]


def test_event_without_data_is_not_dispatched():
    """Spec: a blank line after no ``data`` line dispatches nothing (only the id is remembered)."""
    parser = SSEParser()
    assert parser.feed("id: 41\n\nevent: ping\n\n") == []
    assert parser.feed("data: later\n\n") == [SSEEvent(data="later", id="41")]


def test_priming_event_with_empty_data_is_not_dispatched_but_its_id_is_kept():
    """yiemagent-defined (sse.py docstring: "an event whose data is empty (a priming event) is not
    dispatched"); the MCP SDK primes streams with ``id: <id>`` and ``data: `` (empty value).
    """
    parser = SSEParser()
    assert parser.feed("id: 7\r\ndata: \r\n\r\n") == []
    assert parser.feed("data: {}\r\n\r\n") == [SSEEvent(data="{}", id="7")]


def test_event_field_sets_the_type_and_missing_event_field_means_message():
    """Spec: ``event:`` names the type; without it (or empty) the type is ``message``."""
    events = SSEParser().feed("event: custom\ndata: 1\n\ndata: 2\n\nevent:\ndata: 3\n\n")
    assert [(e.event, e.data) for e in events] == [("custom", "1"), ("message", "2"), ("message", "3")]


def test_id_persists_across_events_and_retry_is_parsed():
    """Spec: the last event id stays until changed; ``retry`` takes digits only."""
    events = SSEParser().feed("id: a\nretry: 1500\ndata: 1\n\ndata: 2\n\nid: b\nretry: soon\ndata: 3\n\n")
    assert [(e.data, e.id, e.retry) for e in events] == [("1", "a", 1500), ("2", "a", 1500), ("3", "b", 1500)]


def test_byte_order_mark_at_the_start_is_ignored():
    """Spec: one leading U+FEFF is skipped, so the first field still parses."""
    assert SSEParser().feed("\ufeffdata: x\n\n") == [SSEEvent(data="x")]


def test_close_dispatches_a_last_event_that_lacks_its_blank_line():
    """yiemagent-defined (lenient): at end of stream a pending event is still delivered."""
    parser = SSEParser()
    assert parser.feed("data: tail") == []
    assert parser.close() == [SSEEvent(data="tail")]


def test_byte_by_byte_feeding_gives_the_same_events_as_one_chunk():
    """Chunk boundaries never change the events (fixed sample with every line ending)."""
    stream = 'data: {"x": "é"}\r\n\r\n: c\rdata: a\rdata: b\r\rid: 3\nevent: e\ndata: z\n\n'
    whole = feed_all([stream])
    assert [e.data for e in whole] == ['{"x": "é"}', "a\nb", "z"]
    assert feed_all(list(stream)) == whole


# --------------------------------------------------------------------------- property

_value_chars = st.characters(blacklist_characters="\r\n\x00", blacklist_categories=("Cs",))
_values = st.text(alphabet=_value_chars, max_size=12)
_events = st.lists(
    st.fixed_dictionaries(
        {
            "data": st.lists(_values, min_size=1, max_size=3).filter(lambda lines: any(lines)),
            "event": st.none() | st.text(alphabet=_value_chars, min_size=1, max_size=8).filter(lambda s: s.strip()),
            "id": st.none() | _values,
            "retry": st.none() | st.integers(min_value=0, max_value=10**6),
            "comment": st.none() | _values,
        }
    ),
    min_size=1,
    max_size=5,
)


def _serialize(events: list[dict[str, Any]], eol: str) -> tuple[str, list[SSEEvent]]:
    lines: list[str] = []
    expected: list[SSEEvent] = []
    last_id: str | None = None
    retry: int | None = None
    for spec in events:
        if spec["comment"] is not None:
            lines.append(":" + spec["comment"])
        if spec["event"] is not None:
            lines.append("event: " + spec["event"])
        if spec["id"] is not None:
            lines.append("id: " + spec["id"])
            last_id = spec["id"]
        if spec["retry"] is not None:
            lines.append(f"retry: {spec['retry']}")
            retry = min(spec["retry"], MAX_RETRY_MS)  # a server's larger value reads as the bound
        lines += ["data: " + line for line in spec["data"]]
        lines.append("")
        expected.append(SSEEvent(event=spec["event"] or "message", data="\n".join(spec["data"]), id=last_id,
                                 retry=retry))
    return "".join(line + eol for line in lines), expected


@settings(deadline=None)
@given(events=_events, eol=st.sampled_from(["\n", "\r\n", "\r"]), cuts=st.lists(st.integers(min_value=0)))
def test_any_byte_chunking_of_a_utf8_stream_gives_the_same_events(
    events: list[dict[str, Any]], eol: str, cuts: list[int]
) -> None:
    """Events are the same however the UTF-8 bytes are cut (even inside a character or a CRLF),
    decoded incrementally as HTTPTransport does.
    """
    text, expected = _serialize(events, eol)
    raw = text.encode("utf-8")
    bounds = sorted({0, len(raw), *(c % (len(raw) + 1) for c in cuts)})
    decoder = codecs.getincrementaldecoder("utf-8")()
    chunks = [decoder.decode(raw[a:b]) for a, b in itertools.pairwise(bounds)]
    assert feed_all(chunks) == expected
    assert feed_all([text]) == expected
