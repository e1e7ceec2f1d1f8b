"""``input_required`` rounds of a 2026-07-28 request, and its integrity-checked ``requestState``.

A served ``tools/call``, ``prompts/get`` or ``resources/read`` whose tool asks
the client for something not answered yet ends with::

    {"resultType": "input_required",
     "inputRequests": {"<key>": {"method": ..., "params": ...}, ...},
     "requestState": "y1.<payload>.<mac>"}

The client retries the same request with ``inputResponses`` (``{"<key>":
result}``) and the ``requestState``; the tool runs again and gets the answers.
The ``requestState`` carries what the next round needs: the answers used so far
(checked), the keys asked, what the tool keeps (``ServedCall.saved``), the round
number, when the first round began, a random nonce, and a digest binding it to
this request (method, tool / prompt name or resource URI, arguments) and to the
verified principal of its client (``AccessToken.principal``; none without
``BearerAuth``): another user's state is refused. It is signed with
HMAC-SHA256 (``RequestStateCodec``; the payload is readable by the client, not
secret): a state that fails the check, belongs to another request, has expired
(``InputLimits.deadline_seconds`` after the first round) or is over
``InputLimits.max_state_chars`` is refused -32602, as are ``inputResponses``
that are not an object of objects or name more than
``InputLimits.max_inputs_per_round`` inputs. A request that would need more than
``InputLimits.max_rounds`` rounds is refused -32602 too.

A ``requestState`` is single-use: the round that carries it spends its nonce
(``UsedStates.use``) before the tool runs, so a replayed round (the same state
sent again, e.g. a final round whose tool did its side effect) is refused -32602
and the tool does not run again. The default ``MemoryUsedStates`` remembers the
nonces of this process until their state expires (at most ``max_entries``; when
it is full of live nonces a round is refused -32603 rather than a nonce
forgotten; at most ``max_entries_per_owner`` of one verified principal, so one
client cannot fill it for others). Several workers sharing ``state_keys`` each have their own record: a
state replayed to *another* worker is not caught unless they share a store
(``MCPServer(used_states=...)``, anything with ``use(nonce, expires_at) ->
bool``: a Redis ``SET NX EX``, a table with a unique key).

Without a ``requestState`` (a client that answers at once), ``inputResponses``
are used as they are (every key the tool asks for); with one, only the keys the
last round asked for are taken, and keys nobody asked for are ignored.

Spec: MCP 2026-07-28, "Multi Round-Trip Requests" (Server Requirements:
"servers MUST treat requestState as untrusted", integrity protection).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..._internal.checks import check_int
from ...exceptions import ConfigError
from ...textpolicy import scrub_secrets
from ...tools.registry import progress_reporter
from ..jsonrpc import MISSING_REQUIRED_CLIENT_CAPABILITY
from .calls import RequestContext, ServedCall, running
from .inputs import InputLimits, InputRequired, InvalidInputResponse, MissingClientCapability
from .wire import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, MAX_PROGRESS_TOKEN_CHARS, Refusal, bounded_text

__all__ = ["InvalidRequestState", "MemoryUsedStates", "RequestStateCodec", "Rounds", "UsedStates", "binding",
           "run_asking"]

_VERSION = "y1"


class InvalidRequestState(Exception):
    """A ``requestState`` this server did not mint unchanged (or one it cannot read)."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class RequestStateCodec:
    """Signs and checks ``requestState`` values (HMAC-SHA256, constant-time comparison).

    Args:
        keys: secret keys (bytes, or str taken as UTF-8), each at least 32 bytes: the first signs, every one
            verifies (rotation: ``[new, old]`` for one deadline, then ``[new]``). None: one random key for
            this process, so states do not survive a restart or reach another worker: with several workers,
            give every one the same keys.

    Raises:
        ConfigError: no key, or a key shorter than 32 bytes.
    """

    def __init__(self, keys: Sequence[bytes | str] | None = None) -> None:
        given = [secrets.token_bytes(32)] if keys is None else [k.encode("utf-8") if isinstance(k, str) else bytes(k)
                                                               for k in keys]
        if not given or any(len(k) < 32 for k in given):
            raise ConfigError("requestState keys: give at least one key of at least 32 bytes")
        self._keys = given

    def seal(self, payload: dict[str, Any]) -> str:
        """``payload`` (JSON values) as a signed token ``y1.<base64url JSON>.<base64url MAC>``.

        Raises:
            TypeError, ValueError: ``payload`` is not JSON.
        """
        body = _b64(json.dumps(payload, separators=(",", ":"), sort_keys=True, allow_nan=False).encode("utf-8"))
        mac = hmac.new(self._keys[0], f"{_VERSION}.{body}".encode("ascii"), hashlib.sha256).digest()
        return f"{_VERSION}.{body}.{_b64(mac)}"

    def unseal(self, token: str) -> dict[str, Any]:
        """The payload of a token ``seal`` made with one of the keys.

        Raises:
            InvalidRequestState: anything else (changed, truncated, another key, not a token).
        """
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != _VERSION:
            raise InvalidRequestState("not a requestState of this server")
        try:
            mac = _unb64(parts[2])
            signed = f"{_VERSION}.{parts[1]}".encode("ascii")
        except (ValueError, binascii.Error, UnicodeError):
            raise InvalidRequestState("unreadable") from None
        if not any(hmac.compare_digest(mac, hmac.new(key, signed, hashlib.sha256).digest()) for key in self._keys):
            raise InvalidRequestState("signature mismatch")
        try:
            payload = json.loads(_unb64(parts[1]))
        except (ValueError, binascii.Error, UnicodeError):
            raise InvalidRequestState("unreadable payload") from None
        if not isinstance(payload, dict):
            raise InvalidRequestState("payload is not an object")
        return payload


class UsedStates(Protocol):
    """Where the nonces of used ``requestState`` values are recorded (single-use rounds)."""

    def use(self, nonce: str, expires_at: float) -> bool:
        """Record ``nonce`` (kept at least until ``expires_at``, Unix seconds); True the first time, False after.

        Raises:
            StateStoreFull: nothing more can be recorded now (the round is refused, not let through).
        """
        ...


class StateStoreFull(Exception):
    """The record of used ``requestState`` nonces is full of live ones."""


class MemoryUsedStates:
    """The nonces used in this process, each kept until its state expires, bounded in all and per owner.

    At most ``max_entries``, and at most ``max_entries_per_owner`` of one owner (the verified principal whose
    rounds spent them). Thread-safe. Full of unexpired nonces (in all, or of that owner), ``use`` raises
    ``StateStoreFull`` (never forgets a live one): one client spending rounds fast fills only its own share,
    never the record of others.
    """

    def __init__(self, max_entries: int = 100_000, *, max_entries_per_owner: int = 1_000) -> None:
        check_int("max_entries", max_entries, minimum=1)
        check_int("max_entries_per_owner", max_entries_per_owner, minimum=1)
        self.max_entries, self.max_entries_per_owner = max_entries, max_entries_per_owner
        self._expiry: dict[str, float] = {}  # insertion order: about the order of expiry
        self._owner: dict[str, str] = {}  # nonce -> its owner (owned ones)
        self._owned: dict[str, dict[str, float]] = {}  # owner -> its nonces -> expiry
        self._lock = threading.Lock()

    def use(self, nonce: str, expires_at: float, owner: str | None = None) -> bool:
        """See ``UsedStates.use``; ``owner``: the principal spending it (None: no owner's share)."""
        now = time.time()
        with self._lock:
            if nonce in self._expiry:
                return False
            while self._expiry and self._expiry[next(iter(self._expiry))] <= now:
                self._forget(next(iter(self._expiry)))
            mine = self._owned.get(owner, {}) if owner is not None else {}
            if len(mine) >= self.max_entries_per_owner:
                for key in [key for key, at in mine.items() if at <= now]:
                    self._forget(key)
                if len(self._owned.get(owner, {})) >= self.max_entries_per_owner:  # type: ignore[arg-type]
                    raise StateStoreFull(f"this client has {self.max_entries_per_owner} requestState rounds live; "
                                         "try again later")
            if len(self._expiry) >= self.max_entries:
                for key in [key for key, at in self._expiry.items() if at <= now]:
                    self._forget(key)
                if len(self._expiry) >= self.max_entries:
                    raise StateStoreFull(f"{self.max_entries} requestState rounds are live; try again later")
            self._expiry[nonce] = expires_at
            if owner is not None:
                self._owner[nonce] = owner
                self._owned.setdefault(owner, {})[nonce] = expires_at
            return True

    def _forget(self, nonce: str) -> None:
        self._expiry.pop(nonce, None)
        owner = self._owner.pop(nonce, None)
        mine = self._owned.get(owner) if owner is not None else None
        if mine is not None:
            mine.pop(nonce, None)
            if not mine:
                del self._owned[owner]  # type: ignore[arg-type]

    def __len__(self) -> int:
        with self._lock:
            return len(self._expiry)


def binding(method: str, name: str, arguments: Any, principal: str | None = None) -> str:
    """The digest tying a ``requestState`` to one request: method, name (or URI), arguments and the principal."""
    text = json.dumps([method, name, arguments, principal], separators=(",", ":"), sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class Rounds:
    """One 2026-07-28 request's rounds: what ``begin`` read from its params, and the next ``input_required``.

    Attributes:
        answers: key -> the client's answer (unchecked until a tool asks for it).
        saved: the tool's ``ServedCall.saved`` of the last round (``{}`` at first).
        round: rounds answered so far (0 for a first request).
    """

    def __init__(self, bound_to: str, codec: RequestStateCodec, limits: InputLimits) -> None:
        self.bound_to, self.codec, self.limits = bound_to, codec, limits
        self.nonce = secrets.token_urlsafe(16)
        self.answers: dict[str, Any] = {}
        self.saved: dict[str, Any] = {}
        self.round = 0
        self.started = time.time()

    @classmethod
    def begin(cls, params: dict[str, Any], bound_to: str, codec: RequestStateCodec, limits: InputLimits,
              used: UsedStates | None = None, owner: str | None = None) -> Rounds:
        """Read ``inputResponses`` and ``requestState`` of ``params`` (see the module docstring).

        Spends the state's nonce in ``used`` (None: a ``MemoryUsedStates`` of this call alone: replays are not
        caught), in ``owner``'s share when ``used`` is a ``MemoryUsedStates``.

        Raises:
            Refusal: -32602 for what the module docstring lists.
        """
        rounds = cls(bound_to, codec, limits)
        responses: dict[str, Any] = {}
        if "inputResponses" in params:
            given = params["inputResponses"]
            if not isinstance(given, dict):
                raise Refusal(INVALID_PARAMS, "inputResponses must be an object (input key -> result)")
            if len(given) > limits.max_inputs_per_round:
                raise Refusal(INVALID_PARAMS, f"inputResponses names {len(given)} inputs (at most "
                                              f"{limits.max_inputs_per_round})")
            for key, value in given.items():
                if not isinstance(value, dict):
                    raise Refusal(INVALID_PARAMS, f"inputResponses[{key!r:.80}] must be an object (the input's result)")
            responses = given
        if "requestState" not in params:
            rounds.answers = dict(responses)
            return rounds
        token = params["requestState"]
        if not isinstance(token, str) or len(token) > limits.max_state_chars:
            raise Refusal(INVALID_PARAMS, f"requestState must be a string of at most {limits.max_state_chars} "
                                          "characters")
        try:
            state = codec.unseal(token)
        except InvalidRequestState:
            raise Refusal(INVALID_PARAMS, "requestState failed its integrity check (changed, or not from this "
                                          "server)") from None
        if state.get("b") != bound_to:
            raise Refusal(INVALID_PARAMS, "requestState belongs to another request (method, name, arguments or "
                                          "the authenticated user differ)")
        if not isinstance(state.get("exp"), (int, float)) or time.time() > state["exp"]:
            raise Refusal(INVALID_PARAMS, f"requestState expired: the request's rounds must end within "
                                          f"{limits.deadline_seconds:g} s; send the request again without it")
        pending, kept = state.get("p"), state.get("a")
        saved, number, started = state.get("s"), state.get("r"), state.get("t")
        nonce = state.get("n")
        if not (isinstance(pending, list) and isinstance(kept, dict) and isinstance(saved, dict)
                and isinstance(number, int) and isinstance(started, (int, float)) and isinstance(nonce, str)):
            raise Refusal(INVALID_PARAMS, "requestState is malformed")
        try:
            recorder = used if used is not None else MemoryUsedStates()
            first_use = recorder.use(nonce, float(state["exp"]), owner) if isinstance(recorder, MemoryUsedStates) \
                else recorder.use(nonce, float(state["exp"]))
        except StateStoreFull as exc:
            raise Refusal(INTERNAL_ERROR, str(exc)) from None
        if not first_use:  # a replayed round: its tool ran (or runs) already with these answers
            raise Refusal(INVALID_PARAMS, "requestState was used already: each round's state is single-use (a "
                                          "replayed round does not run the tool again); send the request again "
                                          "without it to start over")
        rounds.answers = {**{k: v for k, v in responses.items() if k in pending}, **kept}
        rounds.saved, rounds.round, rounds.started = saved, number, float(started)
        return rounds

    def input_required(self, call: ServedCall, requests: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """The ``input_required`` result asking ``requests``, with the next ``requestState``.

        Raises:
            Refusal: -32602 past ``max_rounds``; -32603 when the state would pass ``max_state_chars`` or
                ``call.saved`` is not JSON.
        """
        number = self.round + 1
        if number > self.limits.max_rounds:
            raise Refusal(INVALID_PARAMS, f"the request still needs input after {self.limits.max_rounds} rounds "
                                          "(InputLimits.max_rounds)")
        state = {"b": self.bound_to, "r": number, "t": self.started, "n": self.nonce,
                 "exp": self.started + self.limits.deadline_seconds, "a": call.used, "p": sorted(requests),
                 "s": call.saved}
        try:
            token = self.codec.seal(state)
        except (TypeError, ValueError) as exc:
            raise Refusal(INTERNAL_ERROR, f"the tool's saved state is not JSON: {exc}"[:300]) from None
        if len(token) > self.limits.max_state_chars:
            raise Refusal(INTERNAL_ERROR, f"the answers and saved state of this request exceed the requestState "
                                          f"bound ({self.limits.max_state_chars} characters)")
        return {"resultType": "input_required", "inputRequests": requests, "requestState": token}


def run_asking(method: str, name: str, arguments: dict[str, Any], request_id: Any, params: dict[str, Any],
               context: RequestContext, work: Callable[[], Any], abort: threading.Event, codec: RequestStateCodec,
               limits: InputLimits, used: UsedStates | None = None) -> tuple[Any, dict[str, Any] | None]:
    """Run ``work()`` as the current ``ServedCall`` of one ``tools/call``, ``prompts/get`` or ``resources/read``.

    ``name``: the tool or prompt name, or the resource URI; ``arguments``: the call's (bound into the state,
    with ``context.identity``'s principal); ``used``: where spent state nonces are recorded.

    Returns:
        ``(work's value, None)``, or ``(None, the input_required result)`` when it asked for an input the
        client has not answered yet (2026-07-28: ``context.modern_request`` set).

    Raises:
        Refusal: -32600 the verified token names nobody (no state can be bound to it);
            -32021 an input needs a capability the client did not declare
            (``data.requiredCapabilities``); -32602 an invalid answer, ``inputResponses`` or ``requestState``
            (``Rounds.begin``) or too many rounds; -32603 a state too large.
        Exception: what ``work`` raises otherwise.
    """
    principal = context.identity.principal if context.identity is not None else None
    rounds = Rounds.begin(params, binding(method, name, arguments, principal), codec, limits, used, principal) \
        if context.modern_request is not None else None
    meta = params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    if isinstance(token, str):
        bounded_text(token, "params._meta.progressToken", MAX_PROGRESS_TOKEN_CHARS)  # echoed in every notification
    call = ServedCall(request_id, arguments, context, token if isinstance(token, (str, int)) else None, abort,
                      limits=limits, answers=rounds.answers if rounds else None,
                      saved=rounds.saved if rounds else None)
    try:
        with running(call), progress_reporter(call.report):
            return work(), None
    except InputRequired as need:
        if rounds is None:  # pragma: no cover - ServedCall.ask raises it in 2026-07-28 only
            raise RuntimeError("input required outside the 2026-07-28 era") from None
        if context.identity is not None and principal is None:  # bound to nobody, any such token could use it
            raise Refusal(INVALID_REQUEST, "the access token names no subject and no client: a requestState "
                                           "cannot be bound to it") from None
        return None, rounds.input_required(call, need.requests)
    except MissingClientCapability as exc:
        raise Refusal(MISSING_REQUIRED_CLIENT_CAPABILITY, str(exc),
                      {"requiredCapabilities": {exc.capability: {}}}) from None
    except InvalidInputResponse as exc:
        raise Refusal(INVALID_PARAMS, scrub_secrets(str(exc))[:1000]) from None
