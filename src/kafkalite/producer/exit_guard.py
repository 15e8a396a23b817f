"""Nothing lost silently at exit: producers the application never closed.

A Java producer left open when the JVM exits loses what it buffered without a word (its
I/O thread is a daemon). kafkalite delivers instead, within a bound, and says what it
could not deliver:

* **Interpreter exit** (``atexit``: the end of the script, ``sys.exit()``, an uncaught
  exception, Ctrl-C): every producer not closed is flushed and closed, all at once, for
  at most ``exit.flush.timeout.ms`` (default 10 s; ``0`` turns the flush off). A
  blocking producer's engine thread still runs at that point; an asyncio producer whose
  loop is stopped but not closed (``loop.run_until_complete(main())``) is flushed by
  running that loop once more; one whose loop is already closed can only be reported.
* **An asyncio loop shutting down**: ``asyncio.run()`` cancels every task still running
  when its main coroutine returns, the producer's sender among them. A sender cancelled
  while its producer is still open flushes and closes the producer (bounded by the same
  setting) before it ends, so ``asyncio.run()`` returns after the records went out.

What is still undelivered then (records that failed, or were unacknowledged when the
time ran out) is reported per topic at ERROR on the ``kafkalite.producer`` logger and on
stderr, e.g.::

    kafkalite Producer (client.id=producer-1) was not closed: 120 record(s) were not
    delivered at exit (orders: 100, audit: 20); exit.flush.timeout.ms=10000; last error:
    ...

A process killed by a signal (SIGKILL, or SIGTERM without a handler) or ``os._exit()``
runs no exit code: close producers explicitly (``with Producer(...)``) where that matters.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import sys
import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kafkalite.config import Config
    from kafkalite.net.engine import EngineThread
    from kafkalite.producer.batch import ProducerBatch

log = logging.getLogger("kafkalite.producer")

__all__ = ["GuardedProducer", "flush_at_loop_shutdown", "register", "undelivered_by_topic", "unregister"]


class GuardedProducer(Protocol):
    """What the exit guard needs of a producer's engine (``ProducerCore``)."""

    blocking: bool
    client_id: str
    closed: bool
    loop: asyncio.AbstractEventLoop | None

    @property
    def cfg(self) -> Config: ...

    def pending_batches(self) -> list[ProducerBatch]:
        """The batches not acknowledged or failed yet."""
        ...

    async def close(self, timeout_s: float | None) -> None: ...


# Producers not closed yet: core -> its engine thread (None: an asyncio producer).
_OPEN: dict[GuardedProducer, EngineThread | None] = {}
_LOCK = threading.Lock()


def register(core: GuardedProducer, engine: EngineThread | None) -> None:
    with _LOCK:
        _OPEN[core] = engine


def unregister(core: GuardedProducer) -> None:
    with _LOCK:
        _OPEN.pop(core, None)


def _undelivered(batch: ProducerBatch) -> int:
    if batch.children:
        return sum(_undelivered(child) for _, child in batch.children)
    return 0 if batch.done and batch.error is None else batch.record_count


def undelivered_by_topic(batches: Iterable[ProducerBatch]) -> dict[str, int]:
    """Records of ``batches`` not acknowledged (failed, or still pending), per topic."""
    out: dict[str, int] = {}
    for batch in batches:
        n = _undelivered(batch)
        if n:
            out[batch.topic] = out.get(batch.topic, 0) + n
    return out


def _last_error(batches: Iterable[ProducerBatch]) -> BaseException | None:
    errors = [b.last_error or b.error for b in batches if (b.last_error or b.error) is not None]
    return errors[-1] if errors else None


def _report(core: GuardedProducer, batches: list[ProducerBatch], when: str) -> None:
    lost = undelivered_by_topic(batches)
    kind = "Producer" if core.blocking else "aio Producer"
    setting = f"exit.flush.timeout.ms={core.cfg['exit.flush.timeout.ms']}"
    if not lost:
        if batches:
            log.warning("kafkalite %s (client.id=%s) was not closed; its %d record(s) were delivered %s (%s). "
                        "Close producers (or use 'with') to not depend on this.", kind, core.client_id,
                        sum(b.record_count for b in batches), when, setting)
        return
    total = sum(lost.values())
    topics = ", ".join(f"{topic}: {n}" for topic, n in sorted(lost.items()))
    error = _last_error(batches)
    # Sent but never acknowledged: the broker may have written them (outcome unknown).
    unknown = sum(_undelivered(b) for b in batches if b.sent_once)
    text = (f"kafkalite {kind} (client.id={core.client_id}) was not closed: {total} record(s) were not "
            f"delivered {when} ({topics})"
            + (f", {unknown} of them sent without an acknowledgement (the broker may have them)"
               if unknown else "")
            + f"; {setting}"
            + (f"; last error: {error}" if error is not None else "")
            + ". Call producer.close() (or use 'with Producer(...)') before exiting.")
    log.error(text)
    # Without logging configured, the ERROR above already reached stderr (logging's
    # last-resort handler); with handlers it went wherever they write: say it here too.
    if log.hasHandlers() and sys.stderr is not None:
        try:
            print(f"WARNING: {text}", file=sys.stderr, flush=True)
        except Exception:
            pass


def _snapshot(core: GuardedProducer) -> list[ProducerBatch]:
    return core.pending_batches()


def _timeout_s(core: GuardedProducer) -> float:
    return max(0.0, core.cfg["exit.flush.timeout.ms"] / 1000.0)


async def flush_at_loop_shutdown(core: GuardedProducer) -> None:
    """The sender was cancelled while its producer is open: its event loop is shutting
    down (``asyncio.run()`` returning). Flush and close, bounded, then report."""
    unregister(core)
    batches = _snapshot(core)
    try:
        await core.close(_timeout_s(core))
    except Exception as exc:  # report below; nothing may escape into the loop's shutdown
        log.debug("closing at loop shutdown: %r", exc)
    _report(core, batches, "when its event loop shut down")


def _start_close(core: GuardedProducer, engine: EngineThread | None
                 ) -> tuple[concurrent.futures.Future[None] | None, str]:
    """Begin closing ``core`` (for at most its exit timeout); None if it cannot run."""
    timeout = _timeout_s(core)
    if engine is not None:
        if not engine.running:
            return None, "at exit (its engine had stopped)"
        return engine.submit(core.close(timeout)), "at exit"
    loop = core.loop
    if loop is None or loop.is_closed():
        core.closed = True
        return None, "at exit (its event loop was closed before the producer)"
    if loop.is_running():  # a loop in another thread
        return asyncio.run_coroutine_threadsafe(core.close(timeout), loop), "at exit"
    if threading.current_thread() is not threading.main_thread():
        return None, "at exit (its event loop was not running)"
    future: concurrent.futures.Future[None] = concurrent.futures.Future()
    try:  # a stopped loop (run_until_complete() returned): run it once more
        loop.run_until_complete(core.close(timeout))
        future.set_result(None)
    except BaseException as exc:
        future.set_exception(exc)
    return future, "at exit"


def flush_all_at_exit() -> None:
    """The ``atexit`` hook: flush and close every producer not closed, in parallel."""
    with _LOCK:
        pending = [(core, engine) for core, engine in _OPEN.items() if not core.closed]
        _OPEN.clear()
    if not pending:
        return
    started = time.monotonic()
    work = []
    for core, engine in pending:
        batches = _snapshot(core)
        if batches and _timeout_s(core) > 0 and sys.stderr is not None:
            # Say why the exit waits (at most the timeout).
            print(f"kafkalite: flushing {sum(b.record_count for b in batches)} record(s) of a producer that "
                  f"was not closed (client.id={core.client_id}; at most {_timeout_s(core):.1f} s, "
                  "exit.flush.timeout.ms)", file=sys.stderr, flush=True)
        future, when = _start_close(core, engine)
        work.append((core, engine, batches, future, when))
    for core, engine, batches, future, when in work:
        if future is not None:
            remaining = _timeout_s(core) + 2.0 - (time.monotonic() - started)
            try:
                future.result(max(0.0, remaining))
            except concurrent.futures.TimeoutError:
                when += " (the close did not finish in time)"
            except BaseException as exc:  # reported with the records below
                log.debug("closing at exit: %r", exc)
        if engine is not None:
            engine.stop(0.5)
        _report(core, batches, when)


atexit.register(flush_all_at_exit)
