"""Wire formats: what models and servers write, before it becomes a message.

The ``llm_call`` contract and streaming chunks (``llm``), provider dialects (``dialects``), tool-call
``arguments``, tool calls written in reply text (``text_tool_calls``), gpt-oss harmony (``harmony``), Markdown
code spans (``markdown_code``), server-sent events (``sse``) and tool schemas OpenAI accepts
(``schema_repair``). Nothing here depends on yiemagent's message types.
"""
