"""A real MCP server on the official ``mcp`` SDK (2.3, ``MCPServer``) whose tools ask the client back.

Run::

    python tests/servers/sdk_callbacks_server.py --port P     # Streamable HTTP on /mcp (SSE replies)
    python tests/servers/sdk_callbacks_server.py --stdio      # stdio

Tools (each asks the client on the call's own stream, ``related_request_id``; the SDK's way):
    ask_name()            form elicitation {name: string (required)} -> "hello <name>" or "<action>"
    ask_profile()         form elicitation with SEP-1034 defaults and SEP-1330 enums: name (default
                          "Ada"), age (integer, default 36), newsletter (boolean, default true),
                          color (titled enum, default "#00FF00"), tags (multi select) -> the JSON answer
    slow_after_ask(seconds)
                          ask_name's elicitation, then sleeps ``seconds`` -> the action
    get_weather(city)     ask_profile's question (message "Profile for the weather in <city>") -> the answer;
                          with ``--sampling-weather``: samples "describe <city>" -> {"sampled": text}
    ask_url()             URL elicitation https://example.com/connect?state=1 -> "<action>"
    sample(prompt, max_tokens=50)
                          sampling/createMessage with systemPrompt "Be brief.", temperature 0.2 and
                          stopSequences ["END"] -> the model's text, model and stopReason as JSON
    sample_with_tools(prompt)
                          sampling with a get_weather tool; when the model asks for it, answers
                          "18C" as tool_result and samples again -> the final text and both stopReasons
    resolved_profile(), resolved_sample(topic), resolved_roots()
                          the same questions through the SDK's resolvers (``Resolve``: ``Elicit``,
                          ``Sample``, ``ListRoots``): in 2026-07-28 an ``input_required`` result answered by
                          retrying (MRTR), in the handshake era requests on the call's stream
    sample_flood(count, max_tokens=100000)
                          handshake era: ``count`` sampling requests on the call's stream, one after another,
                          each asking ``max_tokens`` (issue 27) -> {"answered", "refused", "max_tokens"}
    sample_flood_rounds(per_round, rounds, max_tokens=100000)
                          2026-07-28: ``rounds`` input_required rounds of ``per_round`` sampling requests each
                          (issue 27's 8 x 200) -> {"answered", "max_tokens"} once the rounds are done
    list_roots()          roots/list (the SDK sends it tied to no request: on the standalone GET
                          stream over HTTP) -> the roots as JSON
"""

from __future__ import annotations

import argparse
import json
import warnings
from typing import Annotated, Any

import anyio
import mcp_types as types
from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    ListRoots,
    MCPServer,
    Resolve,
    Sample,
)
from mcp.shared.exceptions import MCPDeprecationWarning
from pydantic import BaseModel

server = MCPServer("yiemagent-test-callbacks-server", version="1.0.0", log_level="WARNING")


class Name(BaseModel):
    name: str


def _as_list(content: object) -> list[object]:
    return list(content) if isinstance(content, list) else [content]


@server.tool()
async def ask_name(ctx: Context) -> str:
    """Ask the user's name (form elicitation)."""
    result = await ctx.elicit("What is your name?", Name)
    return f"hello {result.data.name}" if result.action == "accept" and result.data else result.action


@server.tool()
async def slow_after_ask(seconds: float, ctx: Context) -> str:
    """Ask the user's name, then sleep ``seconds`` before answering."""
    result = await ctx.elicit("What is your name?", Name)
    await anyio.sleep(seconds)
    return result.action


PROFILE_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "default": "Ada"},
        "age": {"type": "integer", "title": "Age", "minimum": 0, "default": 36},
        "newsletter": {"type": "boolean", "title": "Newsletter", "default": True},
        "color": {"type": "string", "title": "Color", "default": "#00FF00",
                  "oneOf": [{"const": "#FF0000", "title": "Red"}, {"const": "#00FF00", "title": "Green"},
                            {"const": "#0000FF", "title": "Blue"}]},
        "tags": {"type": "array", "title": "Tags", "items": {"type": "string", "enum": ["a", "b", "c"]}},
    },
    "required": ["name", "age"],
}


@server.tool()
async def ask_profile(ctx: Context) -> str:
    """Ask a profile whose fields have defaults and enums (raw schema: titled enum, multi select)."""
    result = await ctx.session.elicit_form("Your profile, please", PROFILE_SCHEMA, related_request_id=ctx.request_id)
    return json.dumps({"action": result.action, "content": result.content}, sort_keys=True)


class ProfileForm(BaseModel):
    """``PROFILE_SCHEMA`` as the SDK's resolvers want it (a model): the titled enum and the multi select
    are kept by rendering the raw schema.
    """

    name: str = "Ada"
    age: int = 36
    newsletter: bool = True
    color: str = "#00FF00"
    tags: list[str] = []

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return dict(PROFILE_SCHEMA)


def _weather_profile(city: str) -> Elicit[ProfileForm]:
    return Elicit(f"Profile for the weather in {city}", ProfileForm)


def _describe(city: str) -> Sample:
    return Sample([types.SamplingMessage(role="user", content=types.TextContent(type="text", text=f"describe {city}"))],
                  max_tokens=30, system_prompt="Be brief.")


async def get_weather(city: str, answer: Annotated[ElicitationResult[ProfileForm], Resolve(_weather_profile)]) -> str:
    """Weather of a city, after asking the profile (the chat test's scripted model calls this name). Through
    the SDK's resolvers, so it asks in both eras (2026-07-28: MRTR).
    """
    if isinstance(answer, AcceptedElicitation):
        return json.dumps({"action": "accept", "content": answer.data.model_dump()}, sort_keys=True)
    return json.dumps({"action": answer.action, "content": None})


async def get_weather_by_sampling(city: str, sampled: Annotated[types.CreateMessageResult, Resolve(_describe)]) -> str:
    """``--sampling-weather``'s ``get_weather``: samples the client's model -> {"sampled": text}."""
    text = sampled.content.text if isinstance(sampled.content, types.TextContent) else ""
    return json.dumps({"sampled": text})


@server.tool()
async def ask_url(ctx: Context) -> str:
    """Ask the user to open a URL (URL elicitation)."""
    result = await ctx.elicit_url("Connect your account", "https://example.com/connect?state=1", "el-1")
    return result.action


@server.tool()
async def sample(prompt: str, ctx: Context, max_tokens: int = 50) -> str:
    """Ask the client's model (sampling)."""
    result = await ctx.session.create_message(
        [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))],
        max_tokens=max_tokens, system_prompt="Be brief.", temperature=0.2, stop_sequences=["END"],
        related_request_id=ctx.request_id,
    )
    text = result.content.text if isinstance(result.content, types.TextContent) else repr(result.content)
    return json.dumps({"text": text, "model": result.model, "stopReason": result.stop_reason})


@server.tool()
async def sample_with_tools(prompt: str, ctx: Context) -> str:
    """Sampling with a tool: one round of tool use, then the final answer."""
    tool = types.Tool(name="get_weather", description="Weather of a city",
                      input_schema={"type": "object", "properties": {"city": {"type": "string"}},
                                    "required": ["city"]})
    messages = [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))]
    first = await ctx.session.create_message(messages, max_tokens=100, tools=[tool],
                                             tool_choice=types.ToolChoice(mode="auto"),
                                             related_request_id=ctx.request_id)
    uses = [c for c in _as_list(first.content) if isinstance(c, types.ToolUseContent)]
    if not uses:
        return json.dumps({"first": first.stop_reason, "text": str(first.content)})
    messages.append(types.SamplingMessage(role="assistant", content=_as_list(first.content)))
    messages.append(types.SamplingMessage(role="user", content=[
        types.ToolResultContent(type="tool_result", tool_use_id=use.id,
                                content=[types.TextContent(type="text", text=f"18C in {use.input.get('city')}")])
        for use in uses]))
    final = await ctx.session.create_message(messages, max_tokens=100, tools=[tool],
                                             tool_choice=types.ToolChoice(mode="none"),
                                             related_request_id=ctx.request_id)
    text = " ".join(c.text for c in _as_list(final.content) if isinstance(c, types.TextContent))
    return json.dumps({"first": first.stop_reason, "calls": [u.input for u in uses], "final": final.stop_reason,
                       "text": text})


def _flood_message(max_tokens: int) -> types.CreateMessageRequestParams:
    return types.CreateMessageRequestParams(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text="hi"))],
        max_tokens=max_tokens)


@server.tool()
async def sample_flood(count: int, ctx: Context, max_tokens: int = 100000) -> str:
    """Handshake era: ``count`` sampling requests, one after another; a refused one is counted, not raised."""
    answered, refused = 0, 0
    for _ in range(count):
        params = _flood_message(max_tokens)
        try:
            await ctx.session.create_message(params.messages, max_tokens=params.max_tokens,
                                             related_request_id=ctx.request_id)
            answered += 1
        except Exception:
            refused += 1
    return json.dumps({"answered": answered, "refused": refused})


@server.tool()
async def sample_flood_rounds(per_round: int, rounds: int, ctx: Context,
                              max_tokens: int = 100000) -> str | types.InputRequiredResult:
    """2026-07-28: ``rounds`` input_required rounds of ``per_round`` sampling requests each."""
    done, answered = (int(part) for part in (ctx.request_state or "0:0").split(":"))
    answered += len(ctx.input_responses or {})
    if done >= rounds:
        return json.dumps({"answered": answered})
    requests = {f"s{i}": types.CreateMessageRequest(params=_flood_message(max_tokens)) for i in range(per_round)}
    return types.InputRequiredResult(input_requests=requests, request_state=f"{done + 1}:{answered}")


@server.tool()
async def list_roots(ctx: Context) -> str:
    """Ask the client for its roots."""
    result = await ctx.session.list_roots()
    return json.dumps([{"uri": str(r.uri), "name": r.name} for r in result.roots])


# ---------------------------------------------------------------------------- both eras: the SDK's resolvers
# (2026-07-28: an ``input_required`` result the client answers by retrying, MRTR; handshake era: requests)


class Profile(BaseModel):
    name: str = "Ada"
    age: int = 36


def _ask_profile() -> Elicit[Profile]:
    return Elicit("Your profile, please", Profile)


def _sample_haiku(topic: str) -> Sample:
    return Sample([types.SamplingMessage(role="user", content=types.TextContent(type="text", text=topic))],
                  max_tokens=30, system_prompt="Be brief.")


def _roots() -> ListRoots:
    return ListRoots()


@server.tool()
async def resolved_profile(answer: Annotated[ElicitationResult[Profile], Resolve(_ask_profile)]) -> str:
    """The profile asked through the SDK's resolver -> {"action", "content"} as JSON."""
    if isinstance(answer, AcceptedElicitation):
        return json.dumps({"action": "accept", "content": answer.data.model_dump()}, sort_keys=True)
    return json.dumps({"action": answer.action, "content": None})


@server.tool()
async def resolved_sample(topic: str, result: Annotated[types.CreateMessageResult, Resolve(_sample_haiku)]) -> str:
    """Sampling through the SDK's resolver -> {"text", "model", "stopReason"} as JSON."""
    text = result.content.text if isinstance(result.content, types.TextContent) else repr(result.content)
    return json.dumps({"text": text, "model": result.model, "stopReason": result.stop_reason})


@server.tool()
async def resolved_roots(result: Annotated[types.ListRootsResult, Resolve(_roots)]) -> str:
    """roots/list through the SDK's resolver -> the roots as JSON."""
    return json.dumps([{"uri": str(r.uri), "name": r.name} for r in result.roots])


def main() -> None:
    warnings.simplefilter("ignore", MCPDeprecationWarning)
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int)
    parser.add_argument("--stdio", action="store_true")
    parser.add_argument("--sampling-weather", action="store_true")
    args = parser.parse_args()
    server.tool(name="get_weather")(get_weather_by_sampling if args.sampling_weather else get_weather)
    if args.stdio:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
