"""The Flask chat example (yiemagent/examples/flask_chat.py): Flask's test client, a real browser.

Scripted models stream with ``ScriptedLLM(delta_chars=...)``; one test uses the real local model.
The browser test serves the app with werkzeug's threaded server on 127.0.0.1 and drives the page
in headless Chromium (Debian ``chromium`` + ``chromium-driver``, installed by ``.ci/run``).
"""

import json
import shutil
import threading
import time

import pytest
import requests

from yiemagent import Agent, tool
from yiemagent.examples.flask_chat import create_app
from yiemagent.formats.sse import SSEParser
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply

from .helpers import free_port


@tool
def get_weather(city: str) -> str:
    """Get the weather in a city."""
    return f"Sunny in {city}"


def _events(response):
    text = b"".join(response.response).decode()
    return [(e.event, json.loads(e.data)) for e in SSEParser().feed(text)]


def _scripted_app(delta_chars=4, delta_delay_seconds=0.0):
    """An app whose conversations each get a scripted, streaming model (``app.llms`` lists them)."""
    llms = []

    def make_agent():
        llm = ScriptedLLM([tool_call_reply("get_weather", {"city": "Paris"}), text_reply("It is sunny in Paris."),
                           text_reply("You are welcome.")], delta_chars=delta_chars,
                          delta_delay_seconds=delta_delay_seconds)
        llms.append(llm)
        return Agent(llm, tools=[get_weather])

    app = create_app(make_agent, secret_key="test")
    app.llms = llms
    return app


@pytest.fixture
def scripted_app():
    """``_scripted_app()``; its agents are shut down after the test."""
    app = _scripted_app()
    yield app
    app.extensions["yiemagent_conversations"].close()


def test_post_chat_streams_events_and_ends_with_the_answer(scripted_app):
    """SSE from the test client: deltas, the tool call and its result, the answer last."""
    client = scripted_app.test_client()
    assert client.get("/").status_code == 200
    response = client.post("/chat", json={"message": "Weather in Paris?"}, buffered=False)
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    assert response.headers["Cache-Control"] == "no-cache"
    events = _events(response)
    names = [name for name, _ in events]
    assert names[-1] == "answer" and names.count("answer") == 1
    answer = events[-1][1]
    assert answer["content"] == "It is sunny in Paris." and answer["status"] == "completed"
    text = "".join(d["delta"] for n, d in events if n == "message_update" and d["delta_type"] == "text")
    assert text == "It is sunny in Paris."
    end = next(d for n, d in events if n == "tool_execution_end")
    assert end["tool_call"]["arguments"] == {"city": "Paris"} and end["result"]["text"] == "Sunny in Paris"


def test_one_conversation_per_session(scripted_app):
    """Two messages in one session share a history; another session starts its own conversation."""
    alice, bob = scripted_app.test_client(), scripted_app.test_client()
    for client in (alice, bob):
        client.get("/")
    _events(alice.post("/chat", json={"message": "Weather in Paris?"}, buffered=False))
    second = _events(alice.post("/chat", json={"message": "Thanks!"}, buffered=False))
    assert second[-1][1]["content"] == "You are welcome."
    roles = [m["role"] for m in alice.get("/history").get_json()["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert bob.get("/history").get_json()["messages"] == []
    assert len(scripted_app.llms) == 2  # alice's agent and bob's
    alice.post("/reset")
    assert alice.get("/history").get_json()["messages"] == []


def test_a_request_without_a_message_is_a_400_with_a_reason(scripted_app):
    """Bad input gets a clear error, and no run starts."""
    client = scripted_app.test_client()
    for body in ({}, {"message": ""}, {"message": 3}):
        response = client.post("/chat", json=body)
        assert response.status_code == 400 and "message" in response.get_json()["error"]
    response = client.post("/chat", data="not json", content_type="text/plain")
    assert response.status_code == 400
    assert all(not llm.calls for llm in scripted_app.llms)


@pytest.mark.model
def test_the_flask_example_streams_a_real_local_model_answer(local_model):
    """The real llama.cpp server through openai_chat(stream=True): many deltas that add up to the answer."""
    app = create_app(lambda: Agent(local_model.llm_call(max_tokens=24)), secret_key="test")
    try:
        client = app.test_client()
        events = _events(client.post("/chat", json={"message": "Say hello."}, buffered=False))
    finally:
        app.extensions["yiemagent_conversations"].close()
    answer = events[-1][1]
    # Gemma writes to max_tokens: such an answer ends 'truncated' (issue 8)
    assert events[-1][0] == "answer" and answer["status"] in ("completed", "truncated"), answer
    deltas = [d["delta"] for n, d in events if n == "message_update" and d["delta_type"] == "text"]
    assert len(deltas) >= 3 and "".join(deltas) == answer["content"]


# --------------------------------------------------------------------------- the page in a real browser

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--window-size=900,700"]


@pytest.fixture
def served_app():
    """A slowly streaming scripted app on werkzeug's threaded server at http://127.0.0.1:<port>/ (real HTTP)."""
    from werkzeug.serving import make_server

    app = _scripted_app(delta_chars=2, delta_delay_seconds=0.04)
    port = free_port()
    server = make_server("127.0.0.1", port, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}/"
    server.shutdown()
    thread.join(10)
    app.extensions["yiemagent_conversations"].close()


@pytest.fixture
def browser(tmp_path):
    """Headless Chromium through chromedriver (both from Debian), with a fresh profile."""
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("chromium and chromedriver not installed (.ci/run installs Debian chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def test_a_stale_tabs_edit_after_another_tabs_regenerate_is_409_not_an_overwrite():
    """Issue 33 point 6: the version was the history's length, which a regenerate keeps, so a second tab's
    edit based on the answer it saw before the first tab regenerated got 200 and overwrote the regenerated
    answer. The version is now a digest of the whole history: the stale tab gets 409 and the history stays.
    """
    answers = iter(f"answer {n}" for n in range(1, 100))
    app = create_app(lambda: Agent(lambda messages, tools: text_reply(next(answers))), secret_key="test")
    try:
        tab_a = app.test_client()
        assert _events(tab_a.post("/chat", json={"message": "hello"}))[-1][1]["content"] == "answer 1"
        tab_b = app.test_client()
        tab_b.set_cookie(*_session_cookie(tab_a))  # the same browser session, a second tab
        seen_by_a = tab_a.get("/conversation").get_json()
        seen_by_b = tab_b.get("/conversation").get_json()
        assert seen_by_a == seen_by_b
        regenerated = tab_b.post("/regenerate", json={"version": seen_by_b["version"]})
        assert regenerated.status_code == 200 and regenerated.get_json()["answer"]["content"] == "answer 2"
        after = tab_b.get("/conversation").get_json()
        assert len(after["history"]) == len(seen_by_a["history"]) and after["version"] != seen_by_a["version"]
        stale = tab_a.post("/edit", json={"turn": 0, "message": "bye", "version": seen_by_a["version"]})
        assert stale.status_code == 409 and "reload" in stale.get_json()["error"]
        assert tab_a.get("/conversation").get_json() == after  # nothing overwritten
        fresh = tab_a.post("/edit", json={"turn": 0, "message": "bye", "version": after["version"]})
        assert fresh.status_code == 200 and fresh.get_json()["answer"]["content"] == "answer 3"
    finally:
        app.extensions["yiemagent_conversations"].close()


def _session_cookie(client):
    cookie = client.get_cookie("session")
    assert cookie is not None
    return ("session", cookie.value)


@pytest.mark.browser
@pytest.mark.timeout(300)  # Chromium and a server started
def test_the_page_shows_the_answer_streaming_in_headless_chromium(served_app, browser, tmp_path):
    """Type a question, press Send: the tool line appears, the answer grows delta by delta (first delta
    and the end are apart in time, so the browser really got a stream) and ends as the final answer.
    """
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(served_app)
    box = browser.find_element(By.ID, "message")
    box.send_keys("Weather in Paris?")
    browser.find_element(By.ID, "send").click()
    wait = WebDriverWait(browser, 30, poll_frequency=0.02)
    answer = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, ".assistant[data-status]"))
    assert answer.text == "It is sunny in Paris." and answer.get_attribute("data-status") == "completed"
    assert int(answer.get_attribute("data-deltas")) == 11  # "It is sunny in Paris." in pieces of 2
    streamed_ms = float(answer.get_attribute("data-answer-ms")) - float(answer.get_attribute("data-first-delta-ms"))
    assert streamed_ms >= 200, "the page got the deltas all at once, not as a stream"  # 10 x 40 ms apart
    tools = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".tool")]
    assert tools[0] == 'calls get_weather({"city":"Paris"})' and tools[1].startswith("get_weather -> Sunny in Paris")
    assert browser.find_element(By.CSS_SELECTOR, ".user").text == "Weather in Paris?"
    shot = tmp_path / "flask_chat.png"
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 1000


@pytest.mark.model
def test_the_documented_command_serves_the_chat_with_servers_from_a_config_file(local_model, weather_server, tmp_path):
    """`python -m yiemagent.examples.flask_chat --base-url ... --config mcp.json`: a real server process;
    GET / is the page, POST /chat streams the run (the model is offered the config's MCP tools).
    """
    import subprocess

    import requests

    from .helpers import PYTHON, wait_for_port

    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"weather": {"url": weather_server}}}))
    port = free_port()
    process = subprocess.Popen(
        [PYTHON, "-m", "yiemagent.examples.flask_chat", "--port", str(port), "--base-url", local_model.base_url,
         "--model", "gemma3-270m", "--max-tokens", "40", "--temperature", "0", "--config", str(config)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for_port(port, 90)
        http = requests.Session()
        page = http.get(f"http://127.0.0.1:{port}/", timeout=10)
        assert page.status_code == 200 and "yiemagent chat" in page.text and http.cookies
        with http.post(f"http://127.0.0.1:{port}/chat", json={"message": "What is the weather in Paris?"},
                       stream=True, timeout=120) as response:
            assert response.headers["Content-Type"].startswith("text/event-stream")
            text = "".join(response.iter_content(chunk_size=None, decode_unicode=True))
    finally:
        process.terminate()
        output = process.communicate(timeout=10)[0]
    events = [(e.event, json.loads(e.data)) for e in SSEParser().feed(text)]
    assert events[-1][0] == "answer", (events[-1], output)
    assert events[-1][1]["status"] in ("completed", "max_turns", "truncated"), (events[-1], output)
    assert any(name == "message_update" for name, _ in events)
    changed = [d for name, d in events if name == "tools_changed"]
    assert changed and {"get_weather", "get_time"} <= set(changed[0]["added"])  # the config's server was listed


# --------------------------------------------------------------------------- approvals (issue 18 point 2)


@pytest.fixture
def approval_app():
    """An app whose agents have ``delete_file`` (``needs_approval=True``); ``app.deleted`` lists its runs."""
    from werkzeug.serving import make_server

    deleted = []

    @tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"deleted {path}"

    def make_agent():
        llm = ScriptedLLM([tool_call_reply("delete_file", {"path": "notes.txt"}, call_id="call_notes"),
                           lambda messages, tools: text_reply("Result: " + messages[-1]["content"]),
                           tool_call_reply("delete_file", {"path": "todo.txt"}, call_id="call_todo"),
                           lambda messages, tools: text_reply("Result: " + messages[-1]["content"])])
        return Agent(llm, tools=[delete_file])

    app = create_app(make_agent, secret_key="test")
    app.deleted = deleted
    port = free_port()
    server = make_server("127.0.0.1", port, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield app, f"http://127.0.0.1:{port}/"
    server.shutdown()
    thread.join(10)
    app.extensions["yiemagent_conversations"].close()


def test_approvals_through_the_test_client_refuse_a_made_up_call(approval_app):
    app, _ = approval_app
    client = app.test_client()
    client.get("/")
    events = _events(client.post("/chat", json={"message": "delete notes.txt"}, buffered=False))
    answer = events[-1][1]
    assert answer["status"] == "awaiting_approval" and answer["pending_approvals"][0]["tool_call_id"] == "call_notes"
    assert any(name == "approval_requested" for name, _ in events) and app.deleted == []
    forged = client.post("/approvals", json={"decisions": {"call_forged": True}})
    assert forged.status_code == 409 and forged.get_json()["tool_call_id"] == "call_forged"
    assert client.post("/approvals", json={"decisions": []}).status_code == 400
    done = client.post("/approvals", json={"decisions": {"call_notes": True}}).get_json()["answer"]
    assert done["status"] == "completed" and done["content"] == "Result: deleted notes.txt"
    assert app.deleted == ["notes.txt"]
    assert client.post("/approvals", json={"decisions": {"call_notes": True}}).status_code == 409
    assert app.deleted == ["notes.txt"]


@pytest.mark.browser
@pytest.mark.timeout(300)  # Chromium and a server started
def test_the_page_shows_approve_and_reject_buttons_in_headless_chromium(approval_app, browser, tmp_path):
    """A run waiting for approval shows the call with Approve/Reject; Approve runs it once and the answer
    appears; on the next message Reject does not run it and the model is told why.
    """
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    app, url = approval_app
    browser.get(url)
    wait = WebDriverWait(browser, 30, poll_frequency=0.02)
    browser.find_element(By.ID, "message").send_keys("delete notes.txt")
    browser.find_element(By.ID, "send").click()
    box = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, '.approval[data-tool-call-id="call_notes"]'))
    assert 'delete_file({"path":"notes.txt"})' in box.text
    waiting = browser.find_element(By.CSS_SELECTOR, '.assistant[data-status="awaiting_approval"]')
    assert "delete_file" in waiting.text and app.deleted == []
    box.find_element(By.CSS_SELECTOR, "button.approve").click()
    done = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, '.assistant[data-status="completed"]'))
    assert done.text == "Result: deleted notes.txt" and app.deleted == ["notes.txt"]
    assert box.get_attribute("data-decided") == "approved"
    assert all(not b.is_enabled() for b in box.find_elements(By.TAG_NAME, "button"))  # no second click

    browser.find_element(By.ID, "message").send_keys("delete todo.txt")
    browser.find_element(By.ID, "send").click()
    box = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, '.approval[data-tool-call-id="call_todo"]'))
    box.find_element(By.CSS_SELECTOR, "button.reject").click()
    done = wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, '.assistant[data-status="completed"]')) == 2
                      and d.find_elements(By.CSS_SELECTOR, '.assistant[data-status="completed"]')[1])
    assert "rejected" in done.text and "the user rejected it in the page" in done.text
    assert app.deleted == ["notes.txt"]  # the rejected call never ran
    shot = tmp_path / "flask_approvals.png"
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 1000


def test_the_stream_names_its_input_first_and_a_cut_stream_answer_is_fetched_by_that_id():
    """Issue 20 point 3: ``event: input`` comes first (the client's own ``input_id``); the client reads
    two deltas and goes away (the response is closed); ``GET /answers/<input_id>`` gives 202 while the
    run goes on, then the whole answer; another session cannot read it; an unknown id is a 404.
    """
    app = _scripted_app(delta_chars=1, delta_delay_seconds=0.02)
    try:
        client = app.test_client()
        client.get("/")
        response = client.post("/chat", json={"message": "Weather in Paris?", "input_id": "my-1"}, buffered=False)
        chunks = iter(response.response)
        parser, events = SSEParser(), []
        while sum(1 for e in events if e.event == "message_update") < 2:
            events += parser.feed(next(chunks).decode())
        response.close()  # the client went away mid-answer
        assert (events[0].event, json.loads(events[0].data)) == ("input", {"input_id": "my-1", "seq": None})
        first = client.get("/answers/my-1")
        assert first.status_code == 202
        deadline = time.monotonic() + 10
        while (got := client.get("/answers/my-1")).status_code == 202:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert got.status_code == 200 and got.get_json()["answer"]["content"] == "It is sunny in Paris."
        assert got.get_json()["answer"]["input_ids"] == ["my-1"]
        assert client.get("/answers/nope").status_code == 404
        other = app.test_client()
        other.get("/")
        assert other.get("/answers/my-1").status_code == 404
        bad = client.post("/chat", json={"message": "hi", "input_id": 7})
        assert bad.status_code == 400 and "input_id" in bad.get_json()["error"]
    finally:
        app.extensions["yiemagent_conversations"].close()


def _branching_app():
    """A conversation whose model answers ``re: <last user text>`` and ``pay`` with a counted ``charge`` call."""
    charged = []

    @tool
    def charge(amount: int) -> str:
        """Charge the card (not safe to repeat)."""
        charged.append(amount)
        return f"charged {amount}"

    def llm(messages, tools):
        last = messages[-1]
        if last["role"] == "user" and last["content"].startswith("pay"):
            return tool_call_reply("charge", {"amount": 5})
        if last["role"] == "tool":
            return text_reply(f"paid: {last['content']}")
        return text_reply(f"re: {[m for m in messages if m['role'] == 'user'][-1]['content']}")

    app = create_app(lambda: Agent(llm, tools=[charge]), secret_key="test")
    app.charged = charged
    return app


def test_edit_and_regenerate_routes_rerun_from_the_message_and_refuse_a_stale_version():
    """ag-ui #2154: the operation is declared (an index, a version), never inferred from a diff."""
    app = _branching_app()
    try:
        client = app.test_client()
        for text in ("pay now", "thanks"):
            streamed = client.post("/chat", json={"message": text})
            assert streamed.status_code == 200
            assert _events(streamed)[-1][0] == "answer"  # read to its end: the run is over
        seen = client.get("/conversation").get_json()
        assert [m["role"] for m in seen["history"]] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
        assert app.charged == [5]
        stale = client.post("/edit", json={"index": 4, "message": "bye", "version": 2})
        assert stale.status_code == 409 and "reload" in stale.get_json()["error"]
        edited = client.post("/edit", json={"turn": 1, "message": "bye", "version": seen["version"]})
        assert edited.status_code == 200 and edited.get_json()["answer"]["content"] == "re: bye"
        assert edited.get_json()["answer"]["branch"]["op"] == "edit"
        assert app.charged == [5]  # langgraph #7361: the recorded charge is not replayed
        kept = client.post("/regenerate", json={"keep_tool_results": True})
        assert kept.status_code == 200 and app.charged == [5]
        bad = client.post("/edit", json={"index": 1, "message": "x"})
        assert bad.status_code == 400 and "only a user message" in bad.get_json()["error"]
    finally:
        app.extensions["yiemagent_conversations"].close()


@pytest.mark.browser
@pytest.mark.timeout(300)  # Chromium and a server started
def test_the_page_edits_a_message_and_regenerates_the_answer_in_headless_chromium(browser, tmp_path):
    """Click Edit on the first message, change it, Save: the transcript is drawn again from the server
    with the new message and its fresh answer, the later turn gone; Regenerate answers the last again.
    """
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    from werkzeug.serving import make_server

    app = _branching_app()
    port = free_port()
    server = make_server("127.0.0.1", port, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        browser.get(f"http://127.0.0.1:{port}/")
        wait = WebDriverWait(browser, 60, poll_frequency=0.05)
        for n, text in enumerate(("hello", "pay now"), start=1):
            browser.find_element(By.ID, "message").send_keys(text)
            browser.find_element(By.ID, "send").click()
            wait.until(lambda d, n=n: len(d.find_elements(By.CSS_SELECTOR, ".assistant[data-status]")) == n)
        assert app.charged == [5]
        assert browser.find_element(By.ID, "regenerate").is_displayed()
        browser.find_elements(By.CSS_SELECTOR, "button.edit")[0].click()
        box = browser.find_element(By.CSS_SELECTOR, "input.edit-box")
        box.clear()
        box.send_keys("hi again")
        browser.find_element(By.CSS_SELECTOR, "button.save").click()
        done = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, '.assistant[data-op="edit"]'))
        assert done.text == "re: hi again" and done.get_attribute("data-status") == "completed"
        assert [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".user")] == ["hi again"]
        assert app.charged == [5]  # the cut turn's charge is not run again
        browser.find_element(By.ID, "regenerate").click()
        again = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, '.assistant[data-op="regenerate"]'))
        assert again.text == "re: hi again"
        assert len(browser.find_elements(By.CSS_SELECTOR, ".assistant")) == 1
        browser.save_screenshot(str(tmp_path / "branching.png"))
        # issue 33: another tab of the same session sends a message; this page's edit is now stale: 409, shown
        other_tab = requests.post(f"http://127.0.0.1:{port}/chat", json={"message": "from the other tab"},
                                  cookies={"session": browser.get_cookie("session")["value"]}, timeout=60)
        assert other_tab.status_code == 200 and '"status": "completed"' in other_tab.text
        browser.find_elements(By.CSS_SELECTOR, "button.edit")[0].click()
        box = browser.find_element(By.CSS_SELECTOR, "input.edit-box")
        box.clear()
        box.send_keys("stale edit")
        browser.find_element(By.CSS_SELECTOR, "button.save").click()
        refused = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, '.error[data-code="409"]'))
        assert "reload" in refused.text
        assert "from the other tab" in [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".user")]
    finally:
        server.shutdown()
        thread.join(10)
        app.extensions["yiemagent_conversations"].close()
