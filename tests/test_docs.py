"""The documentation site (docs/, Sphinx): it builds with warnings as errors, and the README points into it.

The ``>>>`` examples of README.rst and docs/**/*.rst run as doctests (setup.cfg ``--doctest-glob``), and
docs/guides/first_assistant.rst is run by tests/test_first_assistant.py. ``.ci/run`` builds the site
too, before the tests. The build is a real ``python -m sphinx`` process (about 30 s on 2 busy cores).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("sphinx", reason="the docs build needs Sphinx (the docs and test extras)")


@pytest.mark.slow
@pytest.mark.timeout(600)  # a Sphinx build: 40 s idle, minutes on a loaded machine
def test_issue_20_the_docs_build_with_no_warning_and_the_api_reference_comes_from_the_docstrings(
        tmp_path: Path) -> None:
    out = tmp_path / "html"
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           "-d", str(tmp_path / "doctrees"), str(ROOT / "docs"), str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stderr.strip() == ""
    for page in ["index", "getting_started", "guides/first_assistant", "guides/mcp", "guides/durable",
                 "guides/streaming", "guides/hooks", "guides/typed_answers", "guides/long_conversations",
                 "guides/local_models", "guides/web_apps", "seed_names", "api/agent"]:
        assert (out / f"{page}.html").is_file(), page
    api = (out / "api" / "agent.html").read_text(encoding="utf-8")
    # autodoc read the docstring: the Agent class, its ask() method and a Google-style "Raises:" section
    assert 'id="yiemagent.agent.Agent"' in api and 'id="yiemagent.agent.Agent.ask"' in api
    # methods of the mixins in private modules are listed with the class
    assert 'id="yiemagent.agent.Agent.approve"' in api and 'id="yiemagent.agent.Agent.stream"' in api
    assert "AgentBusyError" in api
    seeds = (out / "seed_names.html").read_text(encoding="utf-8")
    assert "beforeToolCall" in seeds and "abortSignal" in seeds


def test_issue_20_the_readme_is_short_and_its_links_into_the_docs_exist() -> None:
    readme = (ROOT / "README.rst").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    links = re.findall(r"<(docs/[^>]+\.rst)>`_", readme)
    assert len(links) >= 10
    assert [link for link in links if not (ROOT / link).is_file()] == []
    assert 'pip install -e ".[test]" && python -m pytest' in readme
    assert 'pip install -e ".[demo]" && yiemagent demo' in readme


def test_every_docs_page_is_in_a_toctree() -> None:
    """Sphinx -W fails on a page outside every toctree too; this says which, without a build."""
    docs = ROOT / "docs"
    listed = set()
    for page in docs.rglob("*.rst"):
        text = page.read_text(encoding="utf-8")
        for block in re.findall(r"^\.\. toctree::\n((?:   .*\n|\n)+)", text, re.M):
            for entry in re.findall(r"^   ([\w/]+)$", block, re.M):
                listed.add((page.parent / entry).relative_to(docs).as_posix())
    pages = {p.relative_to(docs).with_suffix("").as_posix() for p in docs.rglob("*.rst")} - {"index"}
    assert pages - listed == set()


def test_pytorch_20359_every_scripted_example_of_the_docs_is_a_doctest_that_runs() -> None:
    """pytorch/pytorch#20359 (and cta-observatory/ctapipe#1516): examples in docs went stale unnoticed
    because nothing ran them. Every example here that needs no server (it uses ``ScriptedLLM``) is a
    ``>>>`` doctest, which pytest runs (setup.cfg: ``docs`` in ``testpaths``, ``--doctest-glob=*.rst``);
    none is left in a plain ``::`` block that nothing runs.
    """
    import configparser
    import doctest

    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    assert "docs" in config["tool:pytest"]["testpaths"].split()
    assert "--doctest-glob=*.rst" in config["tool:pytest"]["addopts"].split()
    unrun, examples = [], 0
    for page in [ROOT / "README.rst", *sorted((ROOT / "docs").rglob("*.rst"))]:
        text = page.read_text(encoding="utf-8")
        examples += len(doctest.DocTestParser().get_examples(text))
        for block in re.findall(r"::\n\n((?:    .*\n|\n)+)", text):
            if "ScriptedLLM(" in block:
                unrun.append(f"{page.relative_to(ROOT)}: {block.strip().splitlines()[0]}")
    assert unrun == []
    assert examples >= 60


def test_issue_20_no_stream_example_prints_tool_call_arguments_as_answer_text() -> None:
    """Issue 20: the README's streaming example appended every ``message_update`` delta to the answer, so
    a call's JSON arguments (``delta_type == "tool_call"``) read as answer text. Every example in the
    README, the docs and the docstrings that picks ``message_update`` events also checks ``delta_type``
    (the streaming guide's doctest shows the difference with a tool call).
    """
    pages = [ROOT / "README.rst", *(ROOT / "docs").rglob("*.rst"), *(ROOT / "yiemagent").rglob("*.py")]
    lines = [(page.relative_to(ROOT), line) for page in pages for line in page.read_text(encoding="utf-8").splitlines()
             if re.search(r"""\.type ==+ ["']message_update["']""", line)]
    assert len(lines) >= 3
    assert [f"{page}: {line.strip()}" for page, line in lines if "delta_type" not in line] == []


def test_issue_27_new_user_the_api_reference_names_answers_events_and_the_web_apps():
    """Issue 27, a new user's first hour: the API reference lacked ``Answer``, ``AnswerStatus``, ``Event`` and
    ``flask_durable.create_app``, which the guides use. Each is documented by name (Sphinx builds with -W).
    """
    api = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs" / "api").glob("*.rst"))
    for name in ("yiemagent.output.answers.Answer\n", "yiemagent.output.answers.AnswerStatus",
                 "yiemagent.loop.events.Event", "yiemagent.examples.flask_durable.create_app",
                 "yiemagent.examples.flask_chat.create_app"):
        assert name in api, name
