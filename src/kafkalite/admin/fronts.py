"""How each front runs the admin API: the two base classes, side by side.

The API is written once, for asyncio, in :class:`~kafkalite.admin.async_admin.AsyncAdminClient`
(every call: ``return await self._run(<area call>(self._core, ...), timeout)``);
``kafkalite.AdminClient`` is generated from it (``tools/generate_fronts.py``). What
differs between the fronts is here, under the same names in both classes:

* ``__init__``: settings, one :class:`~kafkalite.admin.core.AdminCore`; the blocking
  front also starts its engine thread;
* ``_run(coro, timeout)``: the asyncio front awaits the call, the blocking one runs it
  on the engine thread and waits (Ctrl-C prompt). The call keeps its own deadline
  (``timeout`` or ``default.api.timeout.ms``) and retries until then; the blocking wait
  gets a few seconds more, so a result arriving right at the deadline is not mistaken
  for a hang;
* ``close(timeout)``: closes the connections; the blocking front then stops its thread.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

from kafkalite.admin.core import AdminCore
from kafkalite.admin.settings import ADMIN_RULES
from kafkalite.arguments import ShapeChecked
from kafkalite.config import Config
from kafkalite.errors import ClientClosedError
from kafkalite.net.engine import EngineThread

T = TypeVar("T")

log = logging.getLogger("kafkalite.admin")

# The engine enforces each call's deadline itself; the caller's wait gets this much
# more so that a result arriving right at the deadline is not mistaken for a hang.
_GRACE_S = 5.0


def _settings(config: Mapping[str, Any] | Config | None, kwargs: dict[str, Any]) -> Config:
    return config if isinstance(config, Config) and not kwargs else ADMIN_RULES.resolve(config, **kwargs)


class AsyncAdminFront(ShapeChecked):
    """``kafkalite.aio.AdminClient``'s way: every call is a coroutine on the caller's loop."""

    def __init__(self, config: Mapping[str, Any] | Config | None = None, **kwargs: Any) -> None:
        self.config = _settings(config, kwargs)
        self._core = AdminCore(self.config)
        self._closed = False

    async def _run(self, coro: Coroutine[Any, Any, T], timeout: float | None) -> T:
        if self._closed:
            coro.close()
            raise ClientClosedError("the admin client is closed")
        return await coro

    async def close(self, timeout: float = 5.0) -> None:
        """Close every connection (idempotent; at most ``timeout`` seconds).

        Example::

            await admin.list_topics()
            await admin.close(timeout=5.0)
            await admin.close()           # idempotent: nothing happens
        """
        if self._closed:
            return
        self._closed = True
        try:
            await asyncio.wait_for(self._core.close(), max(0.01, timeout))
        except asyncio.TimeoutError:
            log.warning("closing the admin client took longer than %.1fs; its connections are dropped", timeout)


class BlockingAdminFront(ShapeChecked):
    """``kafkalite.AdminClient``'s way: every call runs on the client's engine thread."""

    def __init__(self, config: Mapping[str, Any] | Config | None = None, **kwargs: Any) -> None:
        self.config = _settings(config, kwargs)
        self._core = AdminCore(self.config)
        self._closed = False
        self._engine = EngineThread(name="kafkalite-admin").start()

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float | None) -> T:
        if self._closed:
            coro.close()
            raise ClientClosedError("the admin client is closed")
        budget = timeout if timeout is not None else self.config["default.api.timeout.ms"] / 1000.0
        return self._engine.run(coro, budget + _GRACE_S, getattr(coro, "__qualname__", "admin call"))

    def close(self, timeout: float = 5.0) -> None:
        """Close every connection (idempotent; at most ``timeout`` seconds).

        Example::

            admin.list_topics()
            admin.close(timeout=5.0)
            admin.close()           # idempotent: nothing happens
        """
        if self._closed:
            return
        self._closed = True
        deadline = time.monotonic() + max(0.0, timeout)
        try:
            self._engine.run(self._core.close(), max(0.01, timeout / 2), "close")
        except Exception:
            pass
        finally:
            # Calls still running in other threads are cancelled (cancel_and_wait).
            self._engine.stop(max(0.0, deadline - time.monotonic()))
