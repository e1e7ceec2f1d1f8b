"""The Flask examples' conversations in memory: started agents by conversation id, bounded per owner and in all.

``Conversations(make_agent, max_conversations=100, owner=..., max_conversations_per_owner=10)``: ``get(id)``
makes a conversation's agent on first use (``make_agent().start()``). At most ``max_conversations`` are kept
(the least recently used is shut down after its current run), and at most ``max_conversations_per_owner`` of
one owner (``owner()``, read when a conversation is made: the verified user, else the client's address): an
owner's new conversation past its share pushes out that owner's own least recently used one, never another's.
Before, one anonymous client opening 100 chats shut down every other user's conversation (its history gone).

Used by ``flask_chat`` (``flask_chat.Conversations`` is this class) and its AG-UI / ``useChat`` routes.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable

from yiemagent import Agent
from yiemagent._internal.checks import check_int

__all__ = ["Conversations"]


class Conversations:
    """Agents by conversation id, bounded per owner and in all, least recently used first out (thread-safe).

    Raises:
        ConfigError: a bound that is not an int >= 1.
    """

    def __init__(self, make_agent: Callable[[], Agent], max_conversations: int = 100, *,
                 owner: Callable[[], str | None] | None = None, max_conversations_per_owner: int = 10) -> None:
        check_int("max_conversations", max_conversations, minimum=1)
        check_int("max_conversations_per_owner", max_conversations_per_owner, minimum=1)
        self.make_agent, self.owner = make_agent, owner
        self.max_conversations, self.max_conversations_per_owner = max_conversations, max_conversations_per_owner
        self._agents: collections.OrderedDict[str, Agent] = collections.OrderedDict()
        self._owner: dict[str, str] = {}
        self._owned: dict[str, collections.OrderedDict[str, None]] = {}
        self._lock = threading.Lock()

    def get(self, conversation_id: str) -> Agent:
        """The conversation's agent, started; made on first use (in ``owner()``'s share)."""
        evicted: list[Agent] = []
        with self._lock:
            agent = self._agents.get(conversation_id)
            if agent is None:
                who = self.owner() if self.owner is not None else None
                agent = self.make_agent().start()
                self._agents[conversation_id] = agent
                if who is not None:
                    self._owner[conversation_id] = who
                    mine = self._owned.setdefault(who, collections.OrderedDict())
                    mine[conversation_id] = None
                    while len(mine) > self.max_conversations_per_owner:
                        evicted.append(self._pop(next(iter(mine))))
                while len(self._agents) > self.max_conversations:
                    evicted.append(self._pop(next(iter(self._agents))))
            self._agents.move_to_end(conversation_id)
            who = self._owner.get(conversation_id)
            if who is not None:
                self._owned[who].move_to_end(conversation_id)
        for old in evicted:  # after its current run; not on this request's time
            threading.Thread(target=old.shutdown, kwargs={"mode": "after_turn"}, daemon=True).start()
        return agent

    def _pop(self, conversation_id: str) -> Agent:
        agent = self._agents.pop(conversation_id)
        who = self._owner.pop(conversation_id, None)
        mine = self._owned.get(who) if who is not None else None
        if mine is not None:
            mine.pop(conversation_id, None)
            if not mine:
                del self._owned[who]  # type: ignore[arg-type]
        return agent

    def drop(self, conversation_id: str) -> None:
        """Forget a conversation (its agent stops after its current run)."""
        with self._lock:
            agent = self._pop(conversation_id) if conversation_id in self._agents else None
        if agent is not None:
            threading.Thread(target=agent.shutdown, kwargs={"mode": "after_turn"}, daemon=True).start()

    def close(self) -> None:
        """Shut every agent down."""
        with self._lock:
            agents = list(self._agents.values())
            self._agents.clear()
            self._owner.clear()
            self._owned.clear()
        for agent in agents:
            agent.shutdown(mode="now")
