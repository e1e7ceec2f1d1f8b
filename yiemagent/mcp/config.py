"""Config: MCP servers given as data (the ``mcpServers`` JSON of desktop MCP clients) made into clients.

The forms ``Agent(mcp_servers=...)`` and ``yiemagent ... --config FILE`` accept::

    {"mcpServers": {                                   # Claude Desktop, Claude Code, Cursor, Windsurf, Cline
        "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"],
                 "env": {"TZ": "UTC"}, "cwd": "~/work"},
        "docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}}}
    {"servers": {"time": {"type": "stdio", "command": "mcp-server-time"},      # VS Code .vscode/mcp.json
                 "docs": {"type": "http", "url": "https://example.com/mcp"}}}
    {"time": {"command": "mcp-server-time"}, "web": "http://127.0.0.1:3001/mcp", "mine": MCPClient(...)}
    ["http://127.0.0.1:3001/mcp", MCPClient(...), {"name": "time", "command": "mcp-server-time"}]
    pathlib.Path("mcp.json")                           # a config file (JSON; // comments and trailing commas ok)
    pathlib.Path("~/.config/goose/config.yaml")        # YAML (needs PyYAML) and TOML (Codex) files too

Each desktop client and coding agent writes its own dialect (Windsurf's ``serverUrl``, Zed's
``context_servers``, Goose's ``extensions`` with ``cmd``/``envs``, opencode's ``mcp`` with a
command list, Codex's ``mcp_servers``, Gemini CLI's ``httpUrl``, Continue's list, ...): the table
in ``yiemagent.mcp.config_dialects`` says how each is read.

Rules (checked when the agent is made, each error a ``ConfigError`` naming the entry):

* an entry has ``command`` (stdio; with optional ``args`` list, ``env`` map, ``cwd``) or ``url`` (Streamable HTTP;
  with optional ``headers`` map), not both; ``type`` may say ``stdio`` (``local`` in GitHub Copilot CLI), ``http``
  or ``streamable-http`` (the legacy ``sse`` transport is refused); ``"tools": ["*"]`` (Copilot CLI) is read, other
  tool filters are refused; ``envFile`` (Cursor, VS Code) adds ``KEY=VALUE`` lines under ``env``;
  ``"disabled": true`` leaves it out; ``timeout`` gives the seconds per request; keys other clients keep for
  themselves (``autoApprove``, ``alwaysAllow``, ``description``, ``dev``) are ignored; any other key is an error.
* ``args`` go to the program one by one, spaces and all (no shell); a whole command line as ``command`` is an error.
* ``${VAR}``, ``${env:VAR}`` (VS Code) and ``${VAR:-default}`` are replaced in ``command``, ``args``, ``env``
  values, ``cwd``, ``url`` and ``headers`` values, from the environment at construction; an unset variable without
  default is an error (never a literal ``${VAR}`` sent as a token; a credential is ``***`` when shown). ``~`` starts
  the home directory in ``command`` and ``cwd``; a relative ``cwd`` is relative to the config file.
* a plain string is not a list of servers (it would be one per character); a Windows path whose backslashes
  JSON read as escapes (``"C:\\temp"`` gives a tab) is an error that says so.

Sources: Claude Desktop / Claude Code ``mcpServers``, VS Code ``mcp.json``, Claude Code variable expansion, and the
documentation of each client named in ``yiemagent.mcp.config_dialects``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._internal.checks import check_number, unknown_name
from ..exceptions import ConfigError
from ..textpolicy import display_text, looks_secret, register_secrets
from .client_arguments import check_http_url
from .config_auth import expand_oauth, make_oauth
from .config_dialects import canonical_entry, load_document, servers_in
from .limits import MCPLimits

if TYPE_CHECKING:  # the client (and requests) load with the first server read (an Agent without one needs neither)
    from .client import MCPClient
    from .sampling import SamplingMeter

__all__ = ["MCPServerConfig", "expand_variables", "load_mcp_config", "mcp_clients", "parse_mcp_servers"]

logger = logging.getLogger("yiemagent.mcp.config")

_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_STDIO_KEYS = {"command", "args", "env", "cwd"}
_HTTP_KEYS = {"url", "headers", "oauth"}
_COMMON_KEYS = {"type", "transportType", "timeout", "disabled", "name"}
_FOREIGN_KEYS = {"autoApprove", "alwaysAllow", "description", "dev", "tools"}
_STDIO_TYPES = {"stdio", "local"}
_HTTP_TYPES = {"http", "streamable-http", "streamableHttp", "streamable_http"}
_CONTROL = re.compile(r"[\x00-\x1f]")
_DRIVE = re.compile(r"[A-Za-z]:")


@dataclass
class MCPServerConfig:
    """One MCP server as data: a stdio ``command`` or a Streamable HTTP ``url``.

    Values are final (variables expanded, ``cwd`` resolved). ``client()``
    makes the ``MCPClient``; nothing starts or connects before its first request.
    """

    name: str | None = None
    """The server's name (tool prefixes, errors, events); None: the client's default."""
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict, repr=False)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    timeout_seconds: float = 30.0
    oauth: dict[str, Any] | None = field(default=None, repr=False)
    """OAuth settings read from the entry (``yiemagent.mcp.config_auth``); None: no OAuth."""
    auth: Any = field(default=None, repr=False)
    """An ``OAuth`` object to use (the CLI sets it); None: one is made from ``oauth`` if given."""

    def __post_init__(self) -> None:
        check_number("timeout_seconds", self.timeout_seconds)  # as the config file's "timeout" is checked

    def __repr__(self) -> str:  # a ${VAR} credential in url, command or args is *** (yiemagent.textpolicy)
        return display_text(f"MCPServerConfig(name={self.name!r}, command={self.command!r}, args={self.args!r}, "
                            f"cwd={self.cwd!r}, url={self.url!r}, timeout_seconds={self.timeout_seconds!r})")

    @property
    def transport(self) -> str:
        """``"stdio"`` or ``"http"``."""
        return "stdio" if self.command is not None else "http"

    def client(self) -> MCPClient:
        """A new, unconnected ``MCPClient`` for this server (the caller closes it)."""
        from .client import MCPClient
        if self.command is not None:
            return MCPClient.stdio(self.command, self.args, env=self.env, cwd=self.cwd,
                                   timeout_seconds=self.timeout_seconds, name=self.name)
        assert self.url is not None
        auth = self.auth if self.auth is not None or self.oauth is None else make_oauth(self.oauth)
        extra = {} if auth is None else {"auth": auth}  # MCPClient(..., auth=OAuth(...))
        return MCPClient(self.url, headers=self.headers or None, timeout_seconds=self.timeout_seconds,
                         name=self.name, **extra)


def expand_variables(text: str, environ: Mapping[str, str] | None = None, *, where: str = "value") -> str:
    """Replace ``${VAR}``, ``${env:VAR}`` and ``${VAR:-default}`` in ``text`` from ``environ``.

    Args:
        text: the string to expand; a ``$`` not followed by ``{`` stays as it is.
        environ: the variables; None uses ``os.environ``.
        where: what ``text`` is, for the error message (e.g. ``mcpServers.docs.url``).

    Raises:
        ConfigError: a variable is unset (or empty) and has no default, or the
            name is not a variable name (``${input:...}`` of VS Code asks the
            user, which a library cannot). The message names the variable, never its value.

    Example:
        >>> expand_variables("Bearer ${TOKEN}", {"TOKEN": "abc"})
        'Bearer abc'
        >>> expand_variables("${PORT:-8080}", {})
        '8080'
    """
    env = os.environ if environ is None else environ
    if "${{" in text:  # Continue's ${{ secrets.NAME }} / ${{ inputs.NAME }}: filled by Continue Hub only
        raise ConfigError(f"{where}: Continue's ${{{{ secrets.NAME }}}} values come from Continue Hub, which "
                          "yiemagent cannot read; set an environment variable and write ${NAME}")

    def value(match: re.Match[str]) -> str:
        inner = match.group(1)
        name, has_default, default = inner.partition(":-")
        if name.startswith("env:"):
            name = name[4:]
        if not _NAME.match(name):
            raise ConfigError(
                f"{where}: ${{{inner}}} is not an environment variable; write ${{NAME}}, ${{env:NAME}} "
                "or ${NAME:-default} (VS Code's ${input:...} prompts are not supported)"
            )
        found = env.get(name)
        if found:
            register_secrets([found] if looks_secret(name, found) else [])  # shown as *** (textpolicy)
            return found
        if has_default:
            return default
        state = "is empty" if name in env else "is not set"
        raise ConfigError(f"{where}: the environment variable {name} {state} "
                          f"(set it, or write ${{{name}:-default}})")

    return _VARIABLE.sub(value, text)


def parse_mcp_servers(
    servers: Any, *, environ: Mapping[str, str] | None = None, base_dir: str | os.PathLike[str] | None = None,
) -> list[MCPServerConfig | MCPClient]:
    """Read any accepted form of ``mcp_servers`` (see the module docstring) without connecting.

    Args:
        servers: a ``{"mcpServers": {...}}`` or ``{"servers": {...}}`` document,
            a ``{name: entry | URL | MCPClient}`` mapping, an iterable of URLs,
            clients and entries (a dict with ``name``), a ``pathlib.Path`` of a
            config file, or None (no servers).
        environ: variables for ``${VAR}``; None uses ``os.environ``.
        base_dir: where a relative ``cwd`` starts; None: the current directory.

    Returns:
        Clients as given (a mapping's name set on them) and ``MCPServerConfig``
        for the rest, in order; disabled entries left out.

    Raises:
        ConfigError: a plain string, a malformed entry (named in the message), an unset variable, a name given twice.
    """
    if servers is None:
        return []
    if isinstance(servers, os.PathLike):
        return list(load_mcp_config(servers, environ=environ))
    if isinstance(servers, (str, bytes)):
        text = servers.decode("utf-8", "replace") if isinstance(servers, bytes) else servers
        hint = f"[{text!r}]" if text.startswith(("http://", "https://")) else (
            f"pathlib.Path({text!r}) to read that config file" if text.lower().endswith((".json", ".yaml", ".yml"))
            else "a list or a mapping")
        raise ConfigError(f"mcp_servers is a plain string {servers!r:.80}; give {hint} "
                          "(a string would be read one character at a time)")
    base = Path(base_dir) if base_dir is not None else None
    items: list[tuple[str | None, Any, str]]
    dialect = ""
    if isinstance(servers, Mapping):
        document = servers_in(servers)
        prefix = ""
        if document is not None:
            prefix, servers, dialect = document
        if isinstance(servers, list):  # Continue: a list of named entries
            items = [(None, value, f"{prefix}{i}") for i, value in enumerate(servers)]
        else:
            items = [(name, value, f"{prefix}{name}") for name, value in servers.items()]
    elif isinstance(servers, Iterable):
        items = [(None, value, f"mcp_servers[{i}]") for i, value in enumerate(servers)]
    else:
        raise ConfigError(f"mcp_servers must be a list, a mapping or a config file path, not {type(servers).__name__}")
    result: list[MCPServerConfig | MCPClient] = []
    seen: set[str] = set()
    for name, value, where in items:
        if name is not None and (not isinstance(name, str) or not name.strip()):
            hint = " (YAML reads on/off/yes/no as true/false: quote the name)" if isinstance(name, bool) else ""
            raise ConfigError(f"{where}: a server name must be a non-empty string, not {name!r}{hint}")
        entry = _entry(name, value, where, environ, base, dialect)
        if entry is None:
            continue
        key = entry.name
        if key is not None:
            if key in seen:
                raise ConfigError(f"{where}: the server name {key!r} is given twice")
            seen.add(key)
        result.append(entry)
    return result


def load_mcp_config(
    path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None,
) -> list[MCPServerConfig]:
    """Read a config file: ``{"mcpServers": {...}}``, VS Code's ``{"servers": {...}}``, any other dialect.

    The dialects are those of ``yiemagent.mcp.config_dialects``.

    The file is JSON; ``//`` and ``/* */`` comments and trailing commas (VS
    Code's JSONC) are allowed; ``.yaml``/``.yml`` files are YAML (Goose, Continue; needs
    PyYAML) and ``.toml`` files TOML (Codex; Python 3.11+). A relative ``cwd`` is relative to the file.

    Raises:
        ConfigError: the file cannot be read, is not JSON (the message gives
            line and column, and the fix for Windows backslashes), has no
            ``mcpServers``/``servers`` object, or an entry is malformed.
    """
    file = Path(path).expanduser()
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the MCP config {str(file)!r}: {exc.strerror or exc}") from exc
    try:  # Windows PowerShell 5's ">" and Out-File write UTF-16 with a byte order mark
        text = raw.decode("utf-16") if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{file}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    data = load_document(text, str(file))
    if isinstance(data, dict) and file.name == "settings.json" and file.parent.name == ".gemini":
        data = {**data, "__yiemagent_dialect__": "gemini"}  # Gemini CLI: $VAR, timeout in ms
    if not isinstance(data, dict) or servers_in(data) is None:
        raise ConfigError(f"{file}: no \"mcpServers\" (or VS Code \"servers\", Zed \"context_servers\", Goose "
                          "\"extensions\", opencode \"mcp\", Codex \"mcp_servers\") object with the servers in it")
    entries = parse_mcp_servers(data, environ=environ, base_dir=file.parent)
    return [e for e in entries if isinstance(e, MCPServerConfig)]


def mcp_clients(
    servers: Any, *, environ: Mapping[str, str] | None = None, sampling_llm_call: Callable[..., Any] | None = None,
    sampling_limits: MCPLimits | None = None, sampling_meter: SamplingMeter | None = None,
) -> tuple[list[MCPClient], list[MCPClient]]:
    """``(clients, made_here)``: one ``MCPClient`` per server of ``servers``; the caller closes ``made_here``.

    ``servers`` is any form ``parse_mcp_servers`` reads; every entry is checked before any client is
    made. Raises ``ConfigError`` as it does. With ``sampling_llm_call`` (``Agent`` passes its ``llm_call``),
    every client made here, and every given client that has no ``callbacks``, no ``sampling/createMessage``
    handler and has not connected yet, answers sampling with ``LLMSampler(sampling_llm_call,
    limits=sampling_limits, meter=sampling_meter)`` (approves every request; see ``yiemagent.mcp.sampling``;
    ``Agent`` gives its ``mcp_limits`` and the ``RunSpend`` that pays). Give a client
    ``callbacks=ClientCallbacks()`` to keep sampling off, or your own ``LLMSampler(..., approve=...)``.
    """
    clients: list[MCPClient] = []
    made: list[MCPClient] = []
    entries = parse_mcp_servers(servers, environ=environ)
    if not entries:
        return clients, made
    from .callbacks import ClientCallbacks
    from .client import MCPClient
    from .sampling import LLMSampler
    for entry in entries:
        if isinstance(entry, MCPClient):
            clients.append(entry)
        else:
            client = entry.client()
            clients.append(client)
            made.append(client)
    if sampling_llm_call is not None:
        for client in clients:
            if client in made or (client.callbacks is None and client.initialize_result is None
                                  and "sampling/createMessage" not in client.request_handlers):
                ClientCallbacks(sampling=LLMSampler(sampling_llm_call, limits=sampling_limits, meter=sampling_meter)
                                ).install(client)
    return clients, made


# ---------------------------------------------------------------------------- helpers


def _entry(
    name: str | None, value: Any, where: str, environ: Mapping[str, str] | None, base: Path | None,
    dialect: str = "",
) -> MCPServerConfig | MCPClient | None:
    from .client import MCPClient
    if isinstance(value, MCPClient):
        if name:
            value.name = name
        return value
    if isinstance(value, str):
        url = _url(value, where, environ)
        return MCPServerConfig(name=name, url=url)
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: a server is a URL, an MCPClient or an object with \"command\" or \"url\", "
                          f"not {type(value).__name__} {value!r:.60}")
    if any(not isinstance(key, str) for key in value):
        raise ConfigError(f"{where}: keys must be strings, not {sorted(map(repr, value))!r:.100}")
    canonical = canonical_entry(value, where, dialect)
    if canonical is None:
        return None
    value = canonical
    unknown = set(value) - _STDIO_KEYS - _HTTP_KEYS - _COMMON_KEYS - _FOREIGN_KEYS - {"envFile"}
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}; a server has "
                          "\"command\", \"args\", \"env\", \"cwd\" (stdio) or \"url\", \"headers\" (HTTP), "
                          "and optionally \"type\", \"timeout\", \"disabled\"")
    if value.get("tools", ["*"]) != ["*"]:  # GitHub Copilot CLI's tool filter
        raise ConfigError(f"{where}: \"tools\" filters are not supported (only [\"*\"]); "
                          "leave it out, or block tools with a before_tool_call hook")
    if value.get("disabled") is True:
        logger.info("%s is disabled; left out", where)
        return None
    if name is None and (name := value.get("name")) is not None and (not isinstance(name, str) or not name.strip()):
        raise ConfigError(f"{where}: \"name\" must be a non-empty string, not {name!r}")
    kind = value.get("type", value.get("transportType"))
    if kind is not None and not isinstance(kind, str):
        raise ConfigError(f"{where}: \"type\" must be a string such as \"stdio\" or \"http\", not {kind!r:.60}")
    if kind is not None and kind not in _STDIO_TYPES | _HTTP_TYPES:
        if kind == "sse":
            raise ConfigError(f"{where}: the legacy HTTP+SSE transport (\"type\": \"sse\") is not supported; "
                              "give the server's Streamable HTTP endpoint with \"type\": \"http\"")
        raise unknown_name(f'{where}: "type"', kind, sorted(_STDIO_TYPES | _HTTP_TYPES))
    has_command, has_url = "command" in value, "url" in value
    if has_command and has_url:
        raise ConfigError(f"{where}: give \"command\" (stdio) or \"url\" (HTTP), not both")
    if not (has_command or has_url):
        raise ConfigError(f"{where}: a server needs \"command\" (stdio) or \"url\" (HTTP)")
    if (kind in _STDIO_TYPES and not has_command) or (kind in _HTTP_TYPES and not has_url):
        raise ConfigError(f"{where}: \"type\": {kind!r} needs \"{'command' if has_url else 'url'}\"")
    wrong = (set(value) & (_HTTP_KEYS if has_command else _STDIO_KEYS | {"envFile"}))
    if wrong:
        raise ConfigError(f"{where}: {', '.join(sorted(wrong))} do(es) not apply to a "
                          f"{'stdio' if has_command else 'HTTP'} server")
    timeout = value.get("timeout", 30.0)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
        raise ConfigError(f"{where}: \"timeout\" must be a positive number of seconds, not {timeout!r}")
    if has_url:
        url = _url(value["url"], f"{where}.url", environ)
        headers = _string_map(value.get("headers", {}), f"{where}.headers", environ)
        oauth = expand_oauth(value.get("oauth"), f"{where}.oauth", lambda t, w: expand_variables(t, environ, where=w))
        return MCPServerConfig(name=name, url=url, headers=headers, oauth=oauth,
                               timeout_seconds=float(timeout))
    command = _command(value["command"], f"{where}.command", environ)
    args = _args(value.get("args", []), f"{where}.args", environ)
    env = _env_file(value.get("envFile"), f"{where}.envFile", environ, base)
    env.update(_string_map(value.get("env", {}), f"{where}.env", environ))
    cwd = value.get("cwd")
    if cwd is not None:
        if not isinstance(cwd, str) or not cwd:
            raise ConfigError(f"{where}.cwd: must be a directory path (a string), not {cwd!r}")
        cwd = _no_escapes(expand_variables(cwd, environ, where=f"{where}.cwd"), f"{where}.cwd", always=True)
        path = Path(cwd).expanduser()
        if not path.is_absolute() and base is not None:
            path = base / path
        cwd = str(path)
    return MCPServerConfig(name=name, command=command, args=args, env=env,
                           cwd=cwd, timeout_seconds=float(timeout))


def _url(value: Any, where: str, environ: Mapping[str, str] | None) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{where}: a URL must be a string, not {type(value).__name__}")
    url = expand_variables(value, environ, where=where).strip()
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}: {value!r:.100} is not an http(s):// URL; a stdio server is "
                          "{\"command\": ..., \"args\": [...]}")
    return check_http_url(url, where)  # the one URL check of MCPClient too (a host is needed)


def _command(value: Any, where: str, environ: Mapping[str, str] | None) -> str:
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: must be the program (a string), with its arguments in \"args\": "
                          f"\"command\": {json.dumps(value[0])}, \"args\": {json.dumps(value[1:])}")
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: must be the program to run (a non-empty string), not {value!r:.60}")
    command = _no_escapes(expand_variables(value, environ, where=where), where, always=True)
    if command.startswith("~"):
        command = os.path.expanduser(command)
    if any(c.isspace() for c in command) and shutil.which(command) is None and not os.path.exists(command):
        try:
            parts = shlex.split(command)
        except ValueError:
            parts = command.split()
        if parts and shutil.which(parts[0]) is not None:
            raise ConfigError(f"{where}: {command!r} is a whole command line; the program goes in \"command\" "
                              f"and each argument in \"args\": \"command\": {json.dumps(parts[0])}, "
                              f"\"args\": {json.dumps(parts[1:])}")
    return command


def _args(value: Any, where: str, environ: Mapping[str, str] | None) -> list[str]:
    if isinstance(value, str):
        try:
            suggestion = json.dumps(shlex.split(value))
        except ValueError:
            suggestion = json.dumps(value.split())
        raise ConfigError(f"{where}: must be a list of strings, one per argument, not one string; "
                          f"write \"args\": {suggestion}")
    if not isinstance(value, list):
        raise ConfigError(f"{where}: must be a list of strings, not {type(value).__name__}")
    args = []
    for i, item in enumerate(value):
        if not isinstance(item, str):
            fix = ""
            if isinstance(item, (bool, int, float)):
                fix = f"; write {json.dumps(str(item).lower() if isinstance(item, bool) else str(item))} in quotes"
            shown = "" if isinstance(item, (list, dict)) else f" {item!r:.40}"  # a YAML alias bomb has no short repr
            raise ConfigError(f"{where}[{i}]: must be a string, not {type(item).__name__}{shown}{fix}")
        args.append(_no_escapes(expand_variables(item, environ, where=f"{where}[{i}]"), f"{where}[{i}]"))
    return args


def _string_map(value: Any, where: str, environ: Mapping[str, str] | None) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: must be an object of strings, not {type(value).__name__}")
    result = {}
    for key, item in value.items():
        if not isinstance(key, str) or not key:
            raise ConfigError(f"{where}: a key must be a non-empty string, not {key!r}")
        if not isinstance(item, str):
            fix = ""
            if isinstance(item, (bool, int, float)):
                fix = f"; write {json.dumps(str(item).lower() if isinstance(item, bool) else str(item))} in quotes"
            raise ConfigError(f"{where}.{key}: must be a string, not {type(item).__name__}{fix}")
        result[key] = expand_variables(item, environ, where=f"{where}.{key}")
    return result


def _env_file(value: Any, where: str, environ: Mapping[str, str] | None, base: Path | None) -> dict[str, str]:
    """``KEY=VALUE`` lines of an ``envFile`` (Cursor, VS Code); ``#`` comments and quotes allowed."""
    if value is None:
        return {}
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: must be a file path, not {value!r}")
    path = Path(expand_variables(value, environ, where=where)).expanduser()
    if not path.is_absolute() and base is not None:
        path = base / path
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read {str(path)!r}: {exc.strerror or exc}") from exc
    result = {}
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, item = line.removeprefix("export ").partition("=")
        key, item = key.strip(), item.strip()
        if not sep or not _NAME.match(key):
            raise ConfigError(f"{where}: line {number} of {path} is not KEY=VALUE")
        if len(item) >= 2 and item[0] == item[-1] and item[0] in "\"'":
            item = item[1:-1]
        result[key] = item
    return result


def _no_escapes(text: str, where: str, *, always: bool = False) -> str:
    """Refuse control characters that JSON made from a Windows path's backslashes (``C:\\temp``: a tab)."""
    found = _CONTROL.search(text)
    if found and (always or _DRIVE.match(text) or "\\" in text):
        escape = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\b": "\\b", "\f": "\\f"}.get(found.group(), "a control")
        raise ConfigError(f"{where}: {text!r:.100} holds {escape} character; a Windows path in JSON needs "
                          "doubled backslashes (\"C:\\\\temp\") or forward slashes (\"C:/temp\")")
    return text
