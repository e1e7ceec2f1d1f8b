"""``yiemagent.examples.flask_durable:from_env()``, the app the web guide runs under gunicorn.

A fresh user's trial of the docs (2026-12-01) found it did not stream, never sent ``OPENAI_API_KEY`` and asked
for model "default" (read from ``OPENAI_MODEL`` while everything else reads ``YIEMAGENT_MODEL``). Driven with
Flask's test client against the scripted OpenAI-compatible server, whose log shows what each request carried.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("flask", reason="the flask extra is not installed")

from yiemagent.examples.flask_durable import from_env
from yiemagent.exceptions import ConfigError


def test_trial_2026_12_01_from_env_streams_with_the_api_key_and_the_model_every_other_recipe_reads(
        scripted_model, tmp_path, monkeypatch):
    base_url, log = scripted_model
    monkeypatch.setenv("YIEMAGENT_STORE", str(tmp_path / "chat.db"))
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-trial-0123456789")
    monkeypatch.setenv("YIEMAGENT_MODEL", "scripted-chat")
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    before = len(log.read_text(encoding="utf-8").splitlines())
    client = from_env().test_client()
    body = client.post("/conversations/c1/stream", json={"message": "hello there", "input_id": "i-1"}).get_data(
        as_text=True)
    events = [line.split(": ", 1)[1] for line in body.splitlines() if line.startswith("event: ")]
    assert events[0] == "input" and "message_update" in events, events
    sent = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()[before:]]
    assert sent and all(r["stream"] for r in sent)
    assert {r["model"] for r in sent} == {"scripted-chat"}
    assert {r["authorization"] for r in sent} == {"Bearer sk-trial-0123456789"}
    answer = client.get("/conversations/c1/answers/i-1")
    assert answer.status_code == 200 and answer.get_json()["answer"]["content"].startswith("You said: hello there")


def test_from_env_without_its_settings_says_which_are_missing(monkeypatch):
    monkeypatch.delenv("YIEMAGENT_STORE", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match=r"YIEMAGENT_STORE .* OPENAI_BASE_URL"):
        from_env()
