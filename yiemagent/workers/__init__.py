"""Workers that serve store-backed conversations in other processes.

* ``yiemagent.workers.drain``: ``AgentPool`` (one agent per conversation per process),
  ``serve_input`` (the web pattern) and ``PollingWorker`` (no engine: poll the store); always
  importable.
* ``yiemagent.workers.dbos_worker``: a recipe on DBOS Transact (``pip install -e ".[dbos]"``);
  import it yourself, it imports ``dbos``.
* ``yiemagent.workers.celery_worker``: a recipe on Celery with a Redis broker
  (``pip install -e ".[celery]"``); import it yourself, it imports ``celery``.
"""

from typing import TYPE_CHECKING

from .._internal.lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from .drain import AgentFactory, AgentPool, PollingWorker, serve_input

_EXPORTS = {
    "AgentFactory": ".drain",
    "AgentPool": ".drain",
    "PollingWorker": ".drain",
    "serve_input": ".drain",
}

__all__ = ["AgentFactory", "AgentPool", "PollingWorker", "serve_input"]

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)  # each name on first use (PEP 562)
