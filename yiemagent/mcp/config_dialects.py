"""Config dialects: the MCP server lists of desktop clients and coding agents, read as one form.

Every client keeps its servers in its own file and with its own key names. This module finds
the servers in a parsed document and rewrites each entry into the canonical keys that
``yiemagent.mcp.config`` checks (``command``/``args``/``env``/``cwd`` or ``url``/``headers``,
``type``, ``timeout`` in seconds, ``disabled``). One row per client (source: each client's
own documentation, 2026):

=======================  ==================================  ===============================================
client                   where the servers are               what differs
=======================  ==================================  ===============================================
Claude Desktop, Cursor,  ``mcpServers`` (JSON)               canonical; Cursor/VS Code ``envFile``
LM Studio, Claude Code
(``.mcp.json``)
Cline, Roo Code          ``mcpServers``                      ``type: "streamableHttp"``, ``timeout`` seconds,
                                                             ``alwaysAllow``/``autoApprove``/``disabledTools``
Windsurf                 ``mcpServers``                      ``serverUrl`` for HTTP servers
Gemini CLI               ``mcpServers`` (settings.json)      ``httpUrl`` for Streamable HTTP (its ``url`` is
                                                             the legacy SSE transport), ``timeout`` in ms
VS Code                  ``servers`` or ``mcp.servers``      ``type``, ``${env:VAR}``, ``inputs`` ignored
Zed                      ``context_servers``                 ``enabled``, ``source``/``settings`` ignored,
                                                             old form ``command: {path, args, env}``
Continue                 ``mcpServers`` as a list (YAML),    entries carry ``name``; ``requestOptions.headers``;
                         old ``experimental.                 old form ``transport: {type, command, args}``
                         modelContextProtocolServers``
Goose                    ``extensions`` (YAML)               ``cmd``, ``envs``, ``uri``, ``enabled``,
                                                             ``type: streamable_http``; ``builtin``/``platform``
                                                             extensions are Goose's own: left out
opencode                 ``mcp`` (``opencode.json``)         ``type: local`` with ``command`` as a list,
                                                             ``environment``; ``type: remote``; ``timeout`` ms
Codex CLI                ``mcp_servers`` (TOML)              ``http_headers``, ``bearer_token_env_var``,
                                                             ``tool_timeout_sec``, ``enabled``
=======================  ==================================  ===============================================

Variables: ``${VAR}``, ``${env:VAR}`` and ``${VAR:-default}`` everywhere; Gemini CLI's ``$VAR`` in
its entries (and in any entry of ``~/.gemini/settings.json``); opencode's ``{env:VAR}`` and
``{file:path}``; Codex's ``env_http_headers`` (header -> variable) and ``bearer_token_env_var``.
Continue Hub's ``${{ secrets.NAME }}`` cannot be read here (a ``ConfigError`` says so). Zed's
``"source": "extension"`` servers are run by Zed's extensions and left out, like Goose's built-ins.
``enabled``/``disabled`` must be booleans.

Tool filters (``disabledTools``, ``excludeTools``, ``enabled_tools``, ...) are accepted when
empty and refused otherwise (yiemagent has no per-server tool filter; a ``before_tool_call``
hook blocks tools). OAuth settings (``oauth``, Cursor's ``auth``, Gemini CLI's ``authProviderType``,
Codex's ``[mcp_servers.NAME.oauth]``) are read by ``yiemagent.mcp.config_auth`` into the canonical
``"oauth"`` key.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .._internal.jsonload import JSONDepthError, loads_bounded
from ..exceptions import ConfigError
from .config_auth import canonical_oauth

__all__ = ["canonical_entry", "load_document", "servers_in"]

logger = logging.getLogger("yiemagent.mcp.config")

_STDIO_KEYS = {"command", "args", "env", "cwd"}
_HTTP_KEYS = {"url", "headers"}
_URL_ALIASES = ("serverUrl", "httpUrl", "uri")  # Windsurf, Gemini CLI, Goose
_TOOL_FILTERS = ("disabledTools", "excludeTools", "includeTools", "enabled_tools", "disabled_tools",
                 "available_tools")
_IGNORED = {"source", "settings", "trust", "display_name", "bundled", "watchPaths", "networkTimeout",
            "startup_timeout_sec", "startup_timeout_ms", "env_keys", "inputs", "requestOptions",
            "sandboxEnabled"}
_OWN_TYPES = {"builtin", "platform", "frontend", "inline_python"}  # Goose's in-process extensions
_DIALECT_MARK = "__yiemagent_dialect__"
"""Set by ``load_mcp_config`` on a document whose file name says its client (``~/.gemini/settings.json``)."""
_GEMINI_KEYS = ("httpUrl", "trust", "excludeTools", "includeTools")
_BARE_VARIABLE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_OPENCODE_VARIABLE = re.compile(r"\{(env|file):([^}]*)\}")
_MAX_DEPTH = 200
"""Deepest nesting a config document may have (a 100,000-deep document is refused, not a RecursionError)."""


def servers_in(data: Mapping[Any, Any]) -> tuple[str, Any, str] | None:
    """``(prefix, servers, dialect)`` for a parsed config document, or None if it is not one.

    ``servers`` is the mapping (or, for Continue, the list) of entries; ``prefix`` names
    where they were (``"mcpServers."``) for error messages; ``dialect`` is ``"opencode"`` or
    ``"gemini"`` where units differ, ``"codex"`` for Codex's ``mcp_servers`` (its OAuth ``scopes``
    sit on the server), else ``""``.
    """
    marked = data.get(_DIALECT_MARK, "")
    for key in ("mcpServers", "servers", "context_servers", "mcp_servers"):
        inner = data.get(key)
        if isinstance(inner, Mapping) and not (_STDIO_KEYS | _HTTP_KEYS) & set(inner):
            if key == "mcp_servers" and not marked:
                marked = "codex"  # Codex CLI's config.toml
            return f"{key}.", inner, marked if isinstance(marked, str) else ""
        if key == "mcpServers" and isinstance(inner, list):  # Continue's config.yaml
            return f"{key}.", inner, ""
    mcp = data.get("mcp")
    if isinstance(mcp, Mapping):
        if isinstance(mcp.get("servers"), Mapping):  # VS Code settings.json
            return "mcp.servers.", mcp["servers"], ""
        if mcp and all(isinstance(v, Mapping) and v.get("type") in ("local", "remote") for v in mcp.values()):
            return "mcp.", mcp, "opencode"
    extensions = data.get("extensions")  # Goose
    if isinstance(extensions, Mapping) and all(isinstance(v, Mapping) for v in extensions.values()):
        return "extensions.", extensions, ""
    experimental = data.get("experimental")  # Continue's old config.json
    if isinstance(experimental, Mapping) and isinstance(experimental.get("modelContextProtocolServers"), list):
        return "experimental.modelContextProtocolServers.", experimental["modelContextProtocolServers"], ""
    assistant = data.get("assistant")  # Zed's older settings
    if isinstance(assistant, Mapping) and isinstance(assistant.get("mcp_servers"), Mapping):
        return "assistant.mcp_servers.", assistant["mcp_servers"], ""
    return None


def canonical_entry(value: Mapping[str, Any], where: str, dialect: str = "") -> dict[str, Any] | None:
    """One server entry in any client's dialect, rewritten with the canonical keys.

    Returns None for an entry that is not an MCP server yiemagent can run (a Goose built-in
    extension). Keys the canonical form knows are kept as they are; unknown keys stay too,
    so the caller's check names them.

    Raises:
        ConfigError: a non-empty tool filter, OAuth settings, two URL keys, a ``type`` that is
            not a string, a timeout in milliseconds that is not a positive number.
    """
    entry = dict(value)
    nested = entry.pop("transport", None)  # Continue's old form
    if isinstance(nested, Mapping):
        entry.update({k: v for k, v in nested.items() if k not in entry})
    if isinstance(entry.get("command"), Mapping):  # Zed's old form: {"path", "args", "env"}
        command = entry.pop("command")
        entry.update({"command": command.get("path"), **{k: command[k] for k in ("args", "env") if k in command}})
    for flag in ("enabled", "disabled"):
        if flag in entry and not isinstance(entry[flag], bool):
            raise ConfigError(f"{where}.{flag}: must be true or false, not {entry[flag]!r:.40}")
    if entry.get("source") == "extension":  # Zed: a server its extension provides; only Zed can run it
        logger.info("%s is provided by a Zed extension (\"source\": \"extension\"); left out", where)
        return None
    kind = entry.get("type")
    if kind is not None and not isinstance(kind, str):
        raise ConfigError(f"{where}: \"type\" must be a string such as \"stdio\" or \"http\", not {kind!r:.60}")
    if kind in _OWN_TYPES:
        logger.info("%s is a built-in extension of its client, not an MCP server; left out", where)
        return None
    if dialect == "opencode":
        _rewrite_strings(entry, lambda text: _OPENCODE_VARIABLE.sub(_opencode_variable(where), text))
        command = entry.get("command")
        if kind == "local" and isinstance(command, list) and command:
            entry["command"], entry["args"] = command[0], [*command[1:], *entry.get("args", [])]
        entry["type"] = "stdio" if kind == "local" else "http"
        if "timeout" in entry:
            entry["timeout"] = _milliseconds(entry["timeout"], f"{where}.timeout")
    if dialect == "gemini" or (dialect != "opencode" and any(k in entry for k in _GEMINI_KEYS)):
        _rewrite_strings(entry, lambda text: _BARE_VARIABLE.sub(r"${\1}", text))  # Gemini CLI expands $VAR too
        if "url" in entry and "httpUrl" not in entry:
            raise ConfigError(f"{where}: Gemini CLI's \"url\" is the legacy HTTP+SSE transport, which is not "
                              "supported; give the server's Streamable HTTP endpoint as \"httpUrl\"")
        if "timeout" in entry:  # Gemini CLI counts milliseconds
            entry["timeout"] = _milliseconds(entry["timeout"], f"{where}.timeout")
    aliases = [k for k in _URL_ALIASES if k in entry]
    if aliases:
        if "url" in entry or len(aliases) > 1:
            given = ["url", *aliases] if "url" in entry else aliases
            raise ConfigError(f"{where}: give one URL, not {', '.join(given)}")
        entry["url"] = entry.pop(aliases[0])
    goose_envs = entry.get("envs")
    for alias, canonical in (("cmd", "command"), ("envs", "env"), ("environment", "env"),
                             ("http_headers", "headers")):
        if alias in entry and canonical not in entry:
            entry[canonical] = entry.pop(alias)
    if "enabled" in entry:
        enabled = entry.pop("enabled")
        if enabled is False:
            entry["disabled"] = True
    if "tool_timeout_sec" in entry and "timeout" not in entry:  # Codex CLI
        entry["timeout"] = entry.pop("tool_timeout_sec")
    from_env = entry.pop("env_http_headers", None)  # Codex CLI: header name -> variable name
    if isinstance(from_env, Mapping):
        entry["headers"] = {**entry.get("headers", {}), **{k: f"${{{v}}}" for k, v in from_env.items()}}
    token_variable = entry.pop("bearer_token_env_var", None)  # Codex CLI
    if isinstance(token_variable, str) and token_variable:
        entry["headers"] = {**entry.get("headers", {}), "Authorization": f"Bearer ${{{token_variable}}}"}
    options = entry.get("requestOptions")  # Continue
    if isinstance(options, Mapping) and isinstance(options.get("headers"), Mapping) and "headers" not in entry:
        entry["headers"] = dict(options["headers"])
    for name in _TOOL_FILTERS:
        if name in entry:
            if entry.pop(name) not in ([], None, ["*"]):
                raise ConfigError(f"{where}: \"{name}\" filters are not supported; leave it out, "
                                  "or block tools with a before_tool_call hook")
    oauth = canonical_oauth(entry, where, dialect)  # oauth / auth / authProviderType: yiemagent.mcp.config_auth
    if oauth is not None:
        entry["oauth"] = oauth
    if entry.get("type") in ("streamableHttp", "streamable_http", "remote"):
        entry["type"] = "http"
    for name in _IGNORED & set(entry):
        del entry[name]
    if goose_envs == {} and entry.get("env") == {} and ("url" in entry or entry.get("type") == "http"):
        del entry["env"]  # Goose writes "envs": {} on every extension, streamable_http ones too
    return entry


def _rewrite_strings(entry: dict[str, Any], rewrite: Callable[[str], str]) -> None:
    """Apply ``rewrite`` to the strings a variable may stand in: url, command, args, cwd, env and headers."""
    for key in ("url", "httpUrl", "serverUrl", "uri", "command", "cwd"):
        if isinstance(entry.get(key), str):
            entry[key] = rewrite(entry[key])
    if isinstance(entry.get("args"), list):
        entry["args"] = [rewrite(a) if isinstance(a, str) else a for a in entry["args"]]
    if isinstance(entry.get("command"), list):
        entry["command"] = [rewrite(a) if isinstance(a, str) else a for a in entry["command"]]
    for key in ("env", "environment", "envs", "headers"):
        if isinstance(entry.get(key), Mapping):
            entry[key] = {k: rewrite(v) if isinstance(v, str) else v for k, v in entry[key].items()}


def _opencode_variable(where: str) -> Callable[[re.Match[str]], str]:
    """Opencode's ``{env:VAR}`` as ``${VAR}``; ``{file:path}`` as the file's text (stripped)."""
    def replace(match: re.Match[str]) -> str:
        kind, name = match.group(1), match.group(2).strip()
        if kind == "env":
            return f"${{{name}}}"
        path = Path(name).expanduser()
        try:
            return path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{where}: {{file:{name}}} cannot be read: {exc}") from None
    return replace


def _milliseconds(value: Any, where: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigError(f"{where}: must be a positive number of milliseconds, not {value!r}")
    return value / 1000.0


def load_document(text: str, where: str) -> Any:
    """A config file's text parsed by its kind: JSON/JSONC, YAML (``.yaml``/``.yml``), TOML (``.toml``).

    YAML needs PyYAML (``pip install pyyaml``); TOML uses the standard library's ``tomllib``
    (Python 3.11+). Documents nested deeper than 200 levels are refused.

    Raises:
        ConfigError: the text does not parse (line and column given where the parser tells),
            the parser is missing, or the nesting is too deep.
    """
    suffix = Path(where).suffix.lower()
    data: Any
    if suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError as exc:
            raise ConfigError(f"{where}: reading a YAML config needs PyYAML (pip install pyyaml)") from exc
        try:
            data = yaml.safe_load(text)
        except (yaml.YAMLError, RecursionError) as exc:
            raise ConfigError(f"{where}: not YAML: {str(exc).splitlines()[0] if str(exc) else exc!r}") from None
    elif suffix == ".toml":
        try:
            import tomllib
        except ImportError as exc:  # Python 3.10
            raise ConfigError(f"{where}: reading a TOML config needs Python 3.11 or later") from exc
        try:
            data = tomllib.loads(text)
        except (tomllib.TOMLDecodeError, RecursionError) as exc:
            raise ConfigError(f"{where}: not TOML: {exc}") from None
    else:
        data = _load_json(text, where)
    _check_depth(data, where)
    return data


def _check_depth(data: Any, where: str) -> None:
    stack: list[tuple[Any, int]] = [(data, 0)]
    seen: set[int] = set()  # YAML aliases share objects: each is walked once (an alias bomb stays linear)
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (Mapping, list)):
            if id(value) in seen:
                continue
            seen.add(id(value))
        if depth > _MAX_DEPTH:
            raise ConfigError(f"{where}: nested more than {_MAX_DEPTH} levels deep; not an MCP config")
        if isinstance(value, Mapping):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


def _load_json(text: str, where: str) -> Any:
    try:
        return loads_bounded(text, max_depth=_MAX_DEPTH)
    except (RecursionError, JSONDepthError):
        raise ConfigError(f"{where}: nested too deep (nested more than {_MAX_DEPTH} levels); "
                          "not an MCP config") from None
    except ValueError:
        pass
    try:
        return loads_bounded(_strip_jsonc(text), max_depth=_MAX_DEPTH)
    except (RecursionError, JSONDepthError):
        raise ConfigError(f"{where}: nested too deep (nested more than {_MAX_DEPTH} levels); "
                          "not an MCP config") from None
    except json.JSONDecodeError as exc:
        hint = ""
        if "escape" in exc.msg.lower():
            hint = ("; a Windows path in JSON needs doubled backslashes (\"C:\\\\Users\\\\me\") "
                    "or forward slashes (\"C:/Users/me\")")
        raise ConfigError(f"{where}: not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}{hint}") from exc


def _strip_jsonc(text: str) -> str:
    """``text`` without ``//`` and ``/* */`` comments and trailing commas (outside strings)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end == -1 else end + 2
        elif c == ",":
            j = i + 1
            while j < n and (text[j].isspace() or text.startswith("//", j) or text.startswith("/*", j)):
                if text.startswith("//", j):
                    j = text.find("\n", j) if "\n" in text[j:] else n
                elif text.startswith("/*", j):
                    end = text.find("*/", j + 2)
                    j = n if end == -1 else end + 2
                else:
                    j += 1
            if j < n and text[j] in "}]":
                i += 1  # a trailing comma
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)
