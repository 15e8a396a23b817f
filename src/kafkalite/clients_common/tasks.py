"""A consumer core's background tasks on the engine loop, and the wait they all do.

Both consumers run a few long-lived engine tasks (fetcher, metadata refresh,
positions, group member). :class:`BackgroundTasks` starts them under names that say
what they are (``kafkalite-consumer-fetcher``), keeps them for ``close()`` to cancel,
and hands the exception of one that dies to the core (which raises it from the next
``poll()``), unless the core is closing. :func:`wait_for_wake` is the loops' one way
to sleep until woken or until their next deadline.

Example::

    tasks = BackgroundTasks(loop, "kafkalite-consumer", "consumer", log, on_death=errors.append,
                            is_closed=lambda: closed)
    tasks.spawn(fetcher.run(), "fetcher")
    ...
    await cancel_and_wait(tasks.tasks, timeout)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

__all__ = ["BackgroundTasks", "wait_for_wake"]


async def wait_for_wake(wake: asyncio.Event, timeout_s: float | None) -> None:
    """Return once ``wake`` is set or after ``timeout_s`` seconds (None: no limit); the
    caller clears ``wake``."""
    if timeout_s is None:
        await wake.wait()
        return
    try:
        await asyncio.wait_for(wake.wait(), timeout_s)
    except asyncio.TimeoutError:
        pass


class BackgroundTasks:
    """The engine tasks of one client core (see the module doc)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, task_prefix: str, kind: str, log: logging.Logger, *,
                 on_death: Callable[[BaseException], None], is_closed: Callable[[], bool]) -> None:
        """Tasks are named ``<task_prefix>-<name>``; ``kind`` names the client in log lines
        (``"share consumer"``)."""
        self._loop = loop
        self._task_prefix = task_prefix
        self._kind = kind
        self._log = log
        self._on_death = on_death
        self._is_closed = is_closed
        self.tasks: list[asyncio.Task[Any]] = []

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """Start ``coro`` as the task ``<task_prefix>-<name>``, watched by :meth:`task_done`."""
        task = self._loop.create_task(coro, name=f"{self._task_prefix}-{name}")
        task.add_done_callback(self.task_done)
        self.tasks.append(task)
        return task

    def task_done(self, task: asyncio.Task[Any]) -> None:
        """Done callback of every engine task of the client (also of those it did not spawn):
        a task that died is logged and its exception handed on, unless the client is closing."""
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None and not self._is_closed():
            self._log.error("%s task %s died: %r", self._kind, task.get_name(), exc, exc_info=exc)
            self._on_death(exc)
