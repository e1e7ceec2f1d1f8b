"""The README's Django note: a view that calls ``agent.ask``, and one that streams, through Django's test client.

Django is configured here with the few settings a view needs (no database, no apps); this module is
also the URLconf.
"""

import json

import django
import pytest
from django.conf import settings

from yiemagent import SSE_HEADERS, Agent, sse_events
from yiemagent.testing import ScriptedLLM, text_reply

if not settings.configured:
    settings.configure(DEBUG=False, SECRET_KEY="test", ROOT_URLCONF=__name__, ALLOWED_HOSTS=["testserver"],
                       MIDDLEWARE=[], INSTALLED_APPS=[], DATABASES={})
    django.setup()

from django.http import HttpRequest, JsonResponse, StreamingHttpResponse
from django.test import Client
from django.urls import path

AGENT = Agent(ScriptedLLM([text_reply("Hello from the agent.")], repeat_last=True, delta_chars=5))


def ask_view(request: HttpRequest) -> JsonResponse:
    """The README's view: one input, wait for its answer, return it as JSON."""
    answer = AGENT.ask(request.POST["message"], timeout_seconds=60)
    return JsonResponse({"content": answer["content"], "status": answer["status"]})


def stream_view(request: HttpRequest) -> StreamingHttpResponse:
    """The streaming variant: server-sent events as the model writes."""
    headers = {k: v for k, v in SSE_HEADERS.items() if k != "Content-Type"}
    return StreamingHttpResponse(sse_events(AGENT.stream(request.POST["message"])),
                                 content_type=SSE_HEADERS["Content-Type"], headers=headers)


urlpatterns = [path("ask", ask_view), path("stream", stream_view)]


@pytest.fixture(autouse=True, scope="module")
def _shutdown_agent():
    yield
    AGENT.shutdown()


def test_a_django_view_that_calls_agent_ask_answers_json():
    """POST /ask -> the answer's content; the agent (not started) runs in the request's thread."""
    response = Client().post("/ask", {"message": "hi"})
    assert response.status_code == 200
    assert response.json() == {"content": "Hello from the agent.", "status": "completed"}


def test_a_django_streaming_view_sends_server_sent_events_ending_with_the_answer():
    """StreamingHttpResponse over sse_events(agent.stream(...)): deltas, then the answer."""
    response = Client().post("/stream", {"message": "hi"})
    assert response["Content-Type"].startswith("text/event-stream") and response.streaming
    body = b"".join(response.streaming_content).decode()
    blocks = [b for b in body.split("\n\n") if b]
    first = json.loads(blocks[0].split("data: ", 1)[1])
    assert blocks[0].startswith("event: input\n") and first["seq"] is None  # the input's id first (no store)
    assert blocks[-1].startswith("event: answer\n")
    assert json.loads(blocks[-1].split("data: ", 1)[1])["input_ids"] == [first["input_id"]]
    assert json.loads(blocks[-1].split("data: ", 1)[1])["content"] == "Hello from the agent."
    deltas = [json.loads(b.split("data: ", 1)[1])["delta"] for b in blocks if b.startswith("event: message_update")]
    assert "".join(deltas) == "Hello from the agent."
