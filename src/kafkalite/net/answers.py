"""An answer handed to its callback at once, for the engine's hot request loops.

A request sent with :meth:`~kafkalite.net.transport.BrokerConnection.send` gets an
``asyncio.Future``; its done-callbacks run one event-loop turn later (``call_soon``),
after another ``epoll_wait`` and a pass over the loop's ready queue. The consumer's
fetcher answers every Fetch by writing the next one, so that turn sat between each
answer and the next request, twice a second per broker at rest and once per batch
under load (issue 27: two loop turns per idle fetch cycle).
:meth:`~kafkalite.net.transport.BrokerConnection.send_direct` gives a
:class:`DirectAnswer` instead, which calls its callback in the same turn the
response frame is read, the connection fails, the request times out, or the caller
cancels it.

The callback runs inside the connection's read callback: it may write new requests
(on this or another connection) but must not block; an exception it raises is logged
and does not reach the connection.

Example::

    def on_answer(answer: DirectAnswer[FetchResponse]) -> None:
        if answer.cancelled() or answer.exception() is not None:
            ...
        else:
            handle(answer.result())

    conn.send_direct(FetchRequest(...), on_answer)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

log = logging.getLogger("kafkalite.net")

__all__ = ["DirectAnswer"]

_PENDING = object()


class DirectAnswer(Generic[T]):
    """The answer to one request; ``callback(self)`` runs once, when it is settled.

    Offers the part of ``asyncio.Future``'s interface that the transport and the
    callback use: ``done``, ``cancelled``, ``result``, ``exception``, ``set_result``,
    ``set_exception`` and ``cancel``.
    """

    __slots__ = ("_callback", "_error", "_result")

    def __init__(self, callback: Callable[[DirectAnswer[T]], object]) -> None:
        self._callback: Callable[[DirectAnswer[T]], object] | None = callback
        self._result: object = _PENDING
        self._error: BaseException | None = None

    def done(self) -> bool:
        return self._callback is None

    def cancelled(self) -> bool:
        return isinstance(self._error, asyncio.CancelledError)

    def result(self) -> T:
        if self._error is not None:
            raise self._error
        if self._result is _PENDING:
            raise asyncio.InvalidStateError("the answer is not settled yet")
        return self._result  # type: ignore[return-value]  # set_result stored a T

    def exception(self) -> BaseException | None:
        if self._callback is not None:
            raise asyncio.InvalidStateError("the answer is not settled yet")
        if self.cancelled():
            raise self._error  # type: ignore[misc]  # as Future.exception() after cancel()
        return self._error

    def set_result(self, result: T) -> None:
        self._result = result
        self._settle()

    def set_exception(self, error: BaseException) -> None:
        self._error = error
        self._settle()

    def cancel(self) -> bool:
        """Settle as cancelled (the callback runs now); False if already settled."""
        if self._callback is None:
            return False
        self._error = asyncio.CancelledError()
        self._settle()
        return True

    def _settle(self) -> None:
        callback, self._callback = self._callback, None
        if callback is None:
            raise asyncio.InvalidStateError("the answer is already settled")
        try:
            callback(self)
        except Exception:  # never into the connection's read callback
            log.exception("the callback of a request's answer failed")
