"""FileTokenStorage: OAuth tokens and registered clients in a JSON file only its owner can read.

Implements the ``TokenStorage`` protocol (``yiemagent.mcp.auth.storage``). The
default file (``default_token_path()``) is ``$XDG_CONFIG_HOME/yiemagent/tokens.json``,
``~/.config/yiemagent/tokens.json`` when ``XDG_CONFIG_HOME`` is unset, and
``%APPDATA%\\yiemagent\\tokens.json`` on Windows.

Safety:

* The directory is created with mode 0700, the file with 0600 (``os.open`` with
  the mode: never readable by others, not even for a moment), written whole to
  a temporary file in the same directory, flushed to disk and renamed over the
  old one (``os.replace``): a reader or a crash sees the old file or the new
  one, never half of one.
* A file readable or writable by group or others, or owned by another user, is
  refused (``InsecureTokenFileError``: ``chmod 600 <file>``), as ssh refuses
  such keys. (Windows: ACLs are not checked.)
* Processes sharing the file take an exclusive lock on ``<file>.lock``
  (``flock``; ``msvcrt.locking`` on Windows) around every read-modify-write,
  waiting at most ``lock_timeout_seconds``.
* Concurrent refreshes: as ``yiemagent.store.StoreTokenStorage``, ``set_tokens``
  is a compare-and-set against the version this object last read or wrote:
  tokens another process wrote meanwhile are kept (``set_tokens_if_unchanged``
  returns ``False``), so a slow refresh never overwrites a newer token; ``delete`` likewise
  keeps tokens written since this object read them (a refresh that lost the
  race never wipes the winner's tokens). ``refresh_lock(key)`` lets one process
  refresh at a time (for authorization servers that revoke a rotated refresh
  token's whole family when it is used twice).

File format (JSON)::

    {"format": 1,
     "tokens":  {"<resource URL>": {"version": "<hex>", "value": {"access_token": ..., ...}}},
     "clients": {"<issuer>":       {"version": "<hex>", "value": {"client_id": ..., ...}}}}
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..._internal.checks import check_number
from ..._internal.jsonload import loads_bounded
from ..._internal.versioned_tokens import VersionedTokenStorage
from ...exceptions import YiemagentError

__all__ = ["FileTokenStorage", "InsecureTokenFileError", "TokenStorageError", "default_token_path"]

logger = logging.getLogger("yiemagent.mcp.auth")

_TOKENS = "tokens"
_CLIENTS = "clients"


class TokenStorageError(YiemagentError):
    """The token file cannot be read, written or locked (the ``OSError`` is ``__cause__``)."""


class InsecureTokenFileError(TokenStorageError, PermissionError):
    """The token file (or its directory) is readable or writable by other users, or owned by another user."""


def default_token_path() -> Path:
    """Where the CLI keeps tokens: ``$XDG_CONFIG_HOME/yiemagent/tokens.json`` (``~/.config`` when unset).

    On Windows ``%APPDATA%\\yiemagent\\tokens.json``.
    """
    if sys.platform == "win32" and os.environ.get("APPDATA"):
        return Path(os.environ["APPDATA"]) / "yiemagent" / "tokens.json"
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "yiemagent" / "tokens.json"


class FileTokenStorage(VersionedTokenStorage):
    """OAuth token storage (``yiemagent.mcp.auth.TokenStorage``) in a 0600 JSON file.

    Args:
        path: the JSON file (created on the first write, with its directory at 0700);
            ``None``: ``default_token_path()``.
        lock_timeout_seconds: the longest a read or write waits for another process's lock.

    Methods raise ``InsecureTokenFileError`` for a file others can read or write,
    ``TokenStorageError`` when the file cannot be read, written, parsed or locked in time.

    Example:
        >>> import os, tempfile
        >>> storage = FileTokenStorage(os.path.join(tempfile.mkdtemp(), "tokens.json"))
        >>> storage.set_tokens("https://mcp.example.com/mcp", {"access_token": "a", "token_type": "Bearer"})
        >>> oct(os.stat(storage.path).st_mode & 0o777)
        '0o600'
    """

    _tokens_kind = _TOKENS
    _clients_kind = _CLIENTS

    def __init__(self, path: str | os.PathLike[str] | None = None, *, lock_timeout_seconds: float = 10.0) -> None:
        self.path = Path(path) if path is not None else default_token_path()
        check_number("lock_timeout_seconds", lock_timeout_seconds)
        self.lock_timeout_seconds = lock_timeout_seconds
        self._seen: dict[tuple[str, str], str | None] = {}
        self._thread_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FileTokenStorage({str(self.path)!r})"

    # ------------------------------------------------------------------ TokenStorage protocol (VersionedTokenStorage)

    def delete_if_unchanged(self, key: str) -> bool:
        """Forget the tokens of ``key`` (logout); registered clients stay.

        Compare-and-set as ``set_tokens``: tokens another process wrote since this
        object last read ``key`` are kept (returns ``False``), so a refresh that
        lost a race never wipes the winner's tokens; an object that never read
        ``key`` deletes whatever is there.
        """
        with self._locked():
            data = self._load()
            entry = data[_TOKENS].get(key)
            current = entry.get("version") if isinstance(entry, dict) else None
            if (_TOKENS, key) in self._seen and entry is not None and current != self._seen[(_TOKENS, key)]:
                logger.info("kept the tokens for %r another process wrote meanwhile", key)
                return False
            if data[_TOKENS].pop(key, None) is not None:
                self._save(data)
            self._seen[(_TOKENS, key)] = None
        return True

    @contextlib.contextmanager
    def refresh_lock(self, key: str, *, timeout_seconds: float = 30.0) -> Iterator[bool]:
        """One refresher at a time across processes (``<file>.refresh.lock``); yields whether it was taken.

        Against an authorization server that rotates refresh tokens and revokes
        the family on reuse, wrap "read the tokens again, refresh only if still
        needed, store" in it. Waits at most ``timeout_seconds``, then yields
        ``False`` (``set_tokens`` stays compare-and-set). The lock is released
        when the holder's process ends, however it ends. ``key`` is accepted for
        the protocol; one lock serves every key of the file.
        """
        with self._thread_lock:
            self._ensure_dir()
        lock_path = str(self.path) + ".refresh.lock"
        with contextlib.ExitStack() as held:
            try:
                held.enter_context(_file_lock(lock_path, timeout_seconds))
            except _LockTimeout:
                logger.warning("the refresh lock %s stayed taken for %.0f s; going on without it", lock_path,
                               timeout_seconds)
                yield False
                return
            yield True

    # ------------------------------------------------------------------ internals

    def _get(self, kind: str, key: str) -> dict[str, Any] | None:
        with self._locked():
            entry = self._load()[kind].get(key)
            version = entry.get("version") if isinstance(entry, dict) else None
            self._seen[(kind, key)] = version if isinstance(version, str) else None
        value = entry.get("value") if isinstance(entry, dict) else None
        if entry is not None and not isinstance(value, dict):
            logger.warning("the %s entry for %r in %s is not a JSON object; ignored", kind, key, self.path)
            return None
        return value

    def _set(self, kind: str, key: str, value: dict[str, Any], *, compare: bool) -> bool:
        if not isinstance(value, dict):
            raise TypeError(f"{kind} must be a dict, not {type(value).__name__}")
        with self._locked():
            data = self._load()
            entry = data[kind].get(key)
            current = entry.get("version") if isinstance(entry, dict) else None
            if compare and (kind, key) in self._seen and current != self._seen[(kind, key)]:
                logger.info("kept the %s for %r another process wrote meanwhile (newer than ours)", kind, key)
                return False
            version = uuid.uuid4().hex
            data[kind][key] = {"version": version, "value": value}
            self._save(data)
            self._seen[(kind, key)] = version
        return True

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """This object's threads one at a time, and other processes through ``<file>.lock``."""
        with self._thread_lock:
            self._ensure_dir()
            with _file_lock(str(self.path) + ".lock", self.lock_timeout_seconds):
                yield

    def _ensure_dir(self) -> None:
        directory = self.path.parent
        if not directory.exists():
            try:
                os.makedirs(directory, mode=0o700, exist_ok=True)
            except OSError as exc:
                raise TokenStorageError(f"cannot create {directory}: {exc.strerror}") from exc
        elif os.name == "posix":
            mode = directory.stat().st_mode
            if mode & stat.S_IWOTH and not mode & stat.S_ISVTX:
                raise InsecureTokenFileError(f"{directory} is writable by every user: keep tokens elsewhere "
                                             f"or chmod 700 {directory}")

    def _load(self) -> dict[str, Any]:
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return {"format": 1, _TOKENS: {}, _CLIENTS: {}}
        except OSError as exc:
            raise TokenStorageError(f"cannot read {self.path}: {exc.strerror}") from exc
        with os.fdopen(fd, "rb") as f:
            _check_private(os.fstat(f.fileno()), self.path)
            raw = f.read()
        try:
            data = loads_bounded(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # RecursionError: a file nested too deep
            raise TokenStorageError(f"{self.path} is not a JSON token file (delete it to log in again)") from exc
        if not isinstance(data, dict):
            raise TokenStorageError(f"{self.path} is not a JSON token file (delete it to log in again)")
        for kind in (_TOKENS, _CLIENTS):
            if not isinstance(data.get(kind), dict):
                data[kind] = {}
        return data

    def _save(self, data: dict[str, Any]) -> None:
        try:
            text = json.dumps(data, ensure_ascii=False, allow_nan=False, indent=1).encode("utf-8")
        except (TypeError, ValueError, RecursionError) as exc:  # NaN, bytes, a lone surrogate, nesting
            # the value itself is not named: it may be a secret
            raise TokenStorageError(f"cannot store these values in {self.path}: {type(exc).__name__} (token values "
                                    "must be JSON: text, finite numbers, lists and objects)") from None
        directory = str(self.path.parent)
        tmp = os.path.join(directory, f".{self.path.name}.{uuid.uuid4().hex}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(text)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
            if os.name == "posix":  # the rename itself on disk
                dir_fd = os.open(directory, os.O_RDONLY)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)
        except OSError as exc:
            raise TokenStorageError(f"cannot write {self.path}: {exc.strerror}") from exc


def _check_private(st: os.stat_result, path: Path) -> None:
    if os.name != "posix":
        return
    if st.st_uid != os.geteuid():
        raise InsecureTokenFileError(f"{path} belongs to another user (uid {st.st_uid}); refusing to use it")
    if st.st_mode & 0o077:
        raise InsecureTokenFileError(f"{path} can be read or written by other users "
                                     f"(mode {stat.S_IMODE(st.st_mode):o}); run: chmod 600 {path}")


class _LockTimeout(TokenStorageError):
    """The lock file stayed taken for the whole wait."""


@contextlib.contextmanager
def _file_lock(lock_path: str, timeout_seconds: float) -> Iterator[None]:
    """``lock_path`` opened (mode 0600) and locked exclusively while the block runs; closing releases it.

    Raises:
        TokenStorageError: the file cannot be opened; ``_LockTimeout`` (one) when it stayed locked.
    """
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise TokenStorageError(f"cannot open the token lock file {lock_path}: {exc.strerror}") from exc
    try:
        _lock(fd, timeout_seconds, lock_path)
        yield
    finally:
        os.close(fd)


def _lock(fd: int, timeout_seconds: float, name: str) -> None:
    """Exclusive lock on ``fd``, polled until ``timeout_seconds`` (``_LockTimeout``, a ``TokenStorageError``, then)."""
    deadline = time.monotonic() + timeout_seconds
    pause = 0.005
    while True:
        try:
            if os.name == "posix":
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            else:  # pragma: no cover - Windows
                import msvcrt

                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
            return
        except OSError as exc:
            if time.monotonic() >= deadline:
                raise _LockTimeout(f"{name} stayed locked by another process for {timeout_seconds:g} s") from exc
        time.sleep(pause)
        pause = min(pause * 2, 0.1)

