"""Recorded runs (issue 33 point 6) are bound to the verified user and bounded per client (point 2 and 3).

vercel/chatbot PR #1486 (a resume of a chat the authenticated user does not own is refused, 403 there) and
lablup/mlxcel #1444 ("one API key or tenant cannot inspect/control another stream"; "bound retained events"):
the Flask example's ``GET /api/chat/<id>/stream`` replayed the last run of *any* chat whose id it was given,
and ``RunRecords`` kept the last 1,000 runs of all clients together, so one client starting runs in 1,000 chats
pushed every other client's record out (their cut streams could not be finished).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from yiemagent import Agent
from yiemagent.agent.ui_runs import RunRecords
from yiemagent.examples.flask_chat import create_app
from yiemagent.testing import ScriptedLLM, text_reply

STORY = " ".join(f"Line {n} of the story." for n in range(1, 31))


def _authenticating(app: Any) -> Any:
    """Stands for the login in front of a real deployment: it sets the standard ``REMOTE_USER`` (here from a test
    header; a real one from a verified session or token).
    """
    def wrapped(environ: dict[str, Any], start_response: Any) -> Any:
        environ["REMOTE_USER"] = environ.pop("HTTP_X_TEST_USER", None)
        return app(environ, start_response)
    return wrapped


@pytest.fixture
def chat_app() -> Iterator[tuple[str, list[ScriptedLLM]]]:
    from flask import request

    from tests.mcp.server.kit import serving

    llms: list[ScriptedLLM] = []

    def make_agent() -> Agent:
        llm = ScriptedLLM([text_reply(STORY)], delta_chars=8, delta_delay_seconds=0.02)
        llms.append(llm)
        return Agent(llm)

    app = create_app(make_agent, secret_key="test", user=lambda: request.environ.get("REMOTE_USER"))
    try:
        with serving(_authenticating(app), path="") as url:
            yield url, llms
    finally:
        app.extensions["yiemagent_conversations"].close()


def _chat(url: str, user: str, chat_id: str, text: str) -> requests.Response:
    body = {"id": chat_id, "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}]}
    return requests.post(f"{url}/api/chat", json=body, headers={"X-Test-User": user}, stream=True, timeout=60)


def _texts(lines: Any) -> str:
    said = ""
    for line in lines:
        if line.startswith("data: {"):
            chunk = json.loads(line[6:])
            said += chunk.get("delta", "") if chunk.get("type") == "text-delta" else ""
    return said


@pytest.mark.slow  # a server on a socket
def test_vercel_chatbot_1486_another_user_cannot_resume_or_continue_a_chat_by_its_id(
        chat_app: tuple[str, list[ScriptedLLM]]) -> None:
    """Alice's stream is cut after its first text delta. Before, Mallory (logged in as herself) resumed Alice's chat
    by its id (``GET /api/chat/<id>/stream``: 200, Alice's whole story) and continued it (``POST`` with that id went
    to Alice's agent). With ``create_app(user=...)`` both are bound to the verified user: Mallory's resume is 204
    and her message with the same id starts a conversation of her own; Alice's resume still gets the whole answer.
    Raw HTTP (``requests``): the cut is the client closing its connection.
    """
    url, llms = chat_app
    cut = _chat(url, "alice", "chat-1", "Tell me a story.")
    assert cut.status_code == 200
    for line in cut.iter_lines(decode_unicode=True):
        if '"text-delta"' in line:
            break
    cut.close()  # Alice's connection breaks mid-answer

    stolen = requests.get(f"{url}/api/chat/chat-1/stream", headers={"X-Test-User": "mallory"}, timeout=60)
    assert stolen.status_code == 204 and "Line 30" not in stolen.text  # before: 200 with Alice's story
    own = _chat(url, "mallory", "chat-1", "What did you tell Alice?")
    assert own.status_code == 200 and _texts(own.iter_lines(decode_unicode=True)) == STORY
    assert len(llms) == 2  # Mallory's message reached an agent of her own, not Alice's
    assert [m["content"] for m in llms[1].calls[0]["messages"] if m["role"] == "user"] == ["What did you tell Alice?"]

    resumed = requests.get(f"{url}/api/chat/chat-1/stream", headers={"X-Test-User": "alice"}, stream=True,
                           timeout=60)
    assert resumed.status_code == 200 and _texts(resumed.iter_lines(decode_unicode=True)) == STORY
    assert [m["content"] for m in llms[0].calls[0]["messages"] if m["role"] == "user"] == ["Tell me a story."]
    assert len(llms[0].calls) == 1  # Alice's story ran once


def test_mlxcel_1444_one_client_starting_runs_in_many_chats_pushes_out_only_its_own_records() -> None:
    """Before, ``RunRecords`` kept the last ``max_records`` runs of everyone together: Mallory starting runs in 50
    chats pushed Alice's record out (her cut stream could no longer be finished). Now each owner keeps at most
    ``max_records_per_owner``; its own oldest makes room.
    """
    records = RunRecords(max_records=20, max_records_per_owner=5)
    alice = records.start("vercel:a", iter([{"content": "hers", "status": "completed"}]), owner="user alice")
    for n in range(50):
        records.start(f"vercel:m{n}", iter([]), owner="address 203.0.113.9")
    assert records.get("vercel:a") is alice
    assert [records.get(f"vercel:m{n}") is not None for n in range(44, 50)] == [False] + [True] * 5
    assert len(records) == 6
    for n in range(30):  # many owners: the process-wide bound still holds, least recently started first out
        records.start(f"vercel:o{n}", iter([]), owner=f"address 198.51.100.{n}")
    assert len(records) == 20 and records.get("vercel:a") is None


def test_a_run_record_replaced_under_its_key_leaves_its_owners_share() -> None:
    """A conversation's new run replaces its last under the same key, and counts once in its owner's share."""
    records = RunRecords(max_records=10, max_records_per_owner=2)
    for _ in range(5):
        records.start("k1", iter([]), owner="o")
    second = records.start("k2", iter([]), owner="o")
    assert records.get("k1") is not None and records.get("k2") is second and len(records) == 2
    deadline = time.monotonic() + 30
    while not second.done and time.monotonic() < deadline:
        threading.Event().wait(0.01)
    assert second.done


def _echo(messages: list[dict[str, Any]], tools: Any) -> Any:
    return text_reply("I know: " + " | ".join(str(m["content"]) for m in messages if m["role"] == "user"))


def test_one_client_opening_many_chats_shuts_down_only_its_own_conversations() -> None:
    """Before, the example kept its last 100 conversations of all clients together: one anonymous client posting
    to 100 ``useChat`` chats shut down Alice's conversation (her ``/history`` afterwards: ``[]``, her PIN gone).
    Now one client (its address; with ``user=``, the user) keeps a tenth of them: the flood pushes out its own.
    Flask's test client (the addresses are set in the environ; no real client opens 100 chats in a loop).
    """
    app = create_app(lambda: Agent(_echo), secret_key="test")
    try:
        alice = app.test_client()
        alice.environ_base["REMOTE_ADDR"] = "192.0.2.1"
        alice.get("/")
        assert b"4711" in alice.post("/chat", json={"message": "my PIN is 4711"}).data
        mallory = app.test_client()
        mallory.environ_base["REMOTE_ADDR"] = "203.0.113.9"
        for n in range(100):
            body = {"id": f"m{n}", "messages": [{"id": "u", "role": "user",
                                                 "parts": [{"type": "text", "text": "hi"}]}]}
            assert mallory.post("/api/chat", json=body).status_code == 200
        history = alice.get("/history").get_json()["messages"]
        assert [m["content"] for m in history if m["role"] == "user"] == ["my PIN is 4711"]  # before: []
        conversations = app.extensions["yiemagent_conversations"]
        assert len(conversations._owned["address 203.0.113.9"]) == 10
    finally:
        app.extensions["yiemagent_conversations"].close()


def test_one_session_posting_many_messages_pushes_out_only_its_own_cut_stream_answers() -> None:
    """``GET /answers/<input_id>`` promised "this session's last 100", but the example kept the last
    ``100 * max_conversations`` of all sessions together: one session posting 150 messages (``max_conversations=1``)
    pushed out Alice's answer (404). Now a session keeps its last 100 and, past the total, the session holding the
    most gives up its oldest. Flask's test client (no real client posts 150 messages in a loop).
    """
    app = create_app(lambda: Agent(_echo), secret_key="test", max_conversations=1)
    try:
        alice, mallory = app.test_client(), app.test_client()
        alice.environ_base["REMOTE_ADDR"], mallory.environ_base["REMOTE_ADDR"] = "192.0.2.1", "203.0.113.9"
        assert b"I know: mine" in alice.post("/chat", json={"message": "mine", "input_id": "alice-1"}).get_data()
        for n in range(150):
            assert b"event: answer" in mallory.post("/chat", json={"message": "x", "input_id": f"m-{n}"}).get_data()
        assert alice.get("/answers/alice-1").status_code == 200  # before: 404
        assert mallory.get("/answers/m-149").status_code == 200
        assert mallory.get("/answers/m-0").status_code == 404  # her oldest made room
        assert mallory.get("/answers/alice-1").status_code == 404  # never another session's
    finally:
        app.extensions["yiemagent_conversations"].close()


@pytest.mark.slow  # a server on a socket
def test_an_anonymous_visitor_cannot_name_a_users_chat_by_its_key(chat_app: tuple[str, list[ScriptedLLM]]) -> None:
    """An app that serves logged-in users and anonymous visitors (``user()`` None) kept a user's chat under
    ``"vercel:<digest of the user>/<id>"`` and a visitor's under ``"vercel:<id>"``: a visitor who sent the id
    ``"<digest of alice>/chat-1"`` (the digest of a known user name) reached Alice's conversation and run. The two
    kinds of key now cannot meet. Raw HTTP (``requests``): no real client sends such an id.
    """
    from yiemagent.examples.flask_ui_protocols import user_digest

    url, llms = chat_app
    first = _chat(url, "alice", "chat-1", "Tell me a story.")
    assert _texts(first.iter_lines(decode_unicode=True)) == STORY
    body = {"id": f"{user_digest('alice')}/chat-1",
            "messages": [{"id": "u2", "role": "user", "parts": [{"type": "text", "text": "Again?"}]}]}
    crafted = requests.post(f"{url}/api/chat", json=body, stream=True, timeout=60)  # no X-Test-User: anonymous
    assert crafted.status_code == 200 and _texts(crafted.iter_lines(decode_unicode=True)) == STORY
    assert len(llms) == 2 and len(llms[0].calls) == 1  # before: Alice's agent answered it (its 2nd call)


@pytest.mark.parametrize("make", [
    lambda: create_app(lambda: Agent(_echo), user="REMOTE_USER"),  # type: ignore[arg-type]
    lambda: RunRecords(max_records_per_owner=float("nan")),  # type: ignore[arg-type]
    lambda: __import__("yiemagent.examples.chat_conversations", fromlist=["x"]).Conversations(
        lambda: Agent(_echo), max_conversations_per_owner=0),
])
def test_the_new_options_fail_closed_when_given(make: Any) -> None:
    """``user`` given as a header's name (which any client writes) or a bound that is NaN or below 1: refused when
    given, never an app that binds nobody or keeps everything.
    """
    from yiemagent import ConfigError

    with pytest.raises(ConfigError):
        make()
