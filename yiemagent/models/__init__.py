"""``llm_call`` implementations: model clients behind the contract of ``yiemagent.formats.llm``.

::

    openai_chat.py   OpenAIChat / openai_chat: any OpenAI-compatible /chat/completions over HTTP
    adapters.py      the ``openai`` SDK client and LiteLLM as an ``llm_call`` (optional extras)
    local.py         LocalModel: a small GGUF model on llama.cpp in this process (the ``local`` extra)
    constrained.py   ConstrainedToolCalls: tool calls by JSON-schema constrained decoding
"""
