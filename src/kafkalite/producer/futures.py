"""Per-record futures that hang off one per-batch result.

``send()`` returns a :class:`RecordFuture` (blocking producer) or an
:class:`AsyncRecordFuture` (asyncio producer). Each is a small slotted object holding
its batch, its index in the batch and its timestamp: there is no thread event, lock
or asyncio future per record. When the broker answers, the batch stores one base
offset (or one error) and every record's metadata is ``base offset + index``, as the
Java client's ``FutureRecordMetadata`` does.

Blocking waits (``result(timeout)``) sleep on one condition shared by the producer,
in short slices so that Ctrl-C is prompt; asyncio waits ``await`` one future per
waiting batch, created only when someone awaits before the batch is done.

Example::

    future = producer.send("orders", b"v")
    future.add_done_callback(lambda f: print(f.result()))
    metadata = future.result(timeout=10)      # RecordMetadata(topic, partition, offset, ...)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from kafkalite.errors import IllegalStateError, InvalidArgumentError, KafkaError, KafkaTimeoutError
from kafkalite.producer.append_kernel import (
    CAsyncRecordFuture,
    CRecordFuture,
    FutureBase,
    install_methods,
)
from kafkalite.producer.batch import DoneSignal, ProducerBatch, record_metadata, resolve
from kafkalite.types import RecordMetadata

__all__ = ["AsyncRecordFuture", "AsyncSendManyResult", "DoneSignal", "RecordFuture", "SendManyResult"]


class RecordFuture(FutureBase):
    """The outcome of one ``send()``: a :class:`~kafkalite.types.RecordMetadata` or an error.

    ``result(timeout)`` blocks (raising the send's error, or KafkaTimeoutError);
    ``add_done_callback(fn)`` calls ``fn(future)`` once it is done (at once if it
    already is; otherwise on the producer's I/O thread, in send order per partition).

    Example::

        future = producer.send("orders", b"v")
        future.add_done_callback(lambda f: print(f.result()))
        assert future.result(timeout=10).topic == "orders"
    """

    # FutureBase holds _batch, _index, _timestamp, _key_size and _value_size and takes
    # them as constructor arguments. With the C extension this class body only lends
    # its methods to the C type of the same name (see the end of this module).
    __slots__ = ()
    _batch: ProducerBatch

    # -------------------------------------------------------------- state

    def done(self) -> bool:
        """True once the record's batch was acknowledged or failed.

        Example::

            future = producer.send("orders", b"v")
            producer.flush()
            assert future.done()
        """
        """True once the record's batch was acknowledged or failed."""
        return self._batch.done

    def cancelled(self) -> bool:
        """Always False: a record once appended cannot be cancelled.

        Example::

            future = producer.send("orders", b"v")
            assert not future.cancelled()
        """
        """Always False: a record once appended cannot be cancelled."""
        return False

    def cancel(self) -> bool:
        """Records cannot be taken back once appended; always False.

        Example::

            future = producer.send("orders", b"v")
            assert future.cancel() is False        # the record is sent all the same
        """
        return False

    def running(self) -> bool:
        """True while the record waits for its acknowledgement.

        Example::

            future = producer.send("orders", b"v")
            producer.flush()
            assert not future.running()
        """
        """True while the record waits for its acknowledgement."""
        return not self._batch.done

    @property
    def topic(self) -> str:
        """The record's topic.

        Example::

            assert producer.send("orders", b"v").topic == "orders"
        """
        """The record's topic."""
        return self._batch.topic

    @property
    def partition(self) -> int:
        """The partition the record was appended to.

        Example::

            assert producer.send("orders", b"v", partition=2).partition == 2
        """
        """The partition the record was appended to."""
        return self._batch.partition

    def _metadata(self) -> RecordMetadata:
        return record_metadata(self._batch, self._index, self._timestamp, self._key_size, self._value_size)

    def _wait(self, timeout: float | None) -> None:
        b = self._batch
        if not b.done:
            b.signal.wait_until(lambda: b.done, timeout, f"send to {b.topic}-{b.partition}")

    def result(self, timeout: float | None = None) -> RecordMetadata:
        """The record's metadata; raises the send's error, or KafkaTimeoutError after ``timeout`` s.

        Example::

            metadata = producer.send("orders", b"v").result(timeout=10)
            assert metadata.topic == "orders"
        """
        self._wait(timeout)
        error = self._error()
        if error is not None:
            raise error
        return self._metadata()

    get = result  # kafka-python's name

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The send's error (None on success), waiting up to ``timeout`` s.

        Example::

            future = producer.send("orders", b"v")
            assert future.exception(timeout=10) is None     # delivered
        """
        self._wait(timeout)
        return self._error()

    def _error(self) -> BaseException | None:
        b = self._batch
        if b.children:
            b = resolve(b, self._index)[0]
        return b.error

    def succeeded(self) -> bool:
        """True once the record was written (``await`` gives its RecordMetadata).

        Example::

            future = producer.send("orders", b"v")
            producer.flush()
            assert future.succeeded() and not future.failed()
        """
        """True once the record was written (``result()`` gives its RecordMetadata)."""
        return self._batch.done and self._error() is None

    def failed(self) -> bool:
        """True once the record failed (``await`` raises its error).

        Example::

            future = producer.send("orders", b"v")
            producer.flush()
            assert not future.failed()
        """
        """True once the record failed (``result()`` raises its error)."""
        return self._batch.done and self._error() is not None

    @property
    def value(self) -> RecordMetadata | None:
        """The metadata if done and successful, else None (kafka-python compatibility).

        Example::

            future = producer.send("orders", b"v")
            producer.flush()
            assert future.value.offset >= 0         # None until done
        """
        return self._metadata() if self.succeeded() else None

    def add_done_callback(self, fn: Callable[[RecordFuture], object]) -> None:
        """Call ``fn(self)`` when done (immediately, in this thread, if already done).

        Example::

            seen = []
            future = producer.send("orders", b"v")
            future.add_done_callback(lambda f: seen.append(f.result().offset))
            producer.flush()
            assert len(seen) == 1
        """
        if not self._batch.add_future_callback(self, fn):
            fn(self)

    def __repr__(self) -> str:
        b = self._batch
        state = "pending" if not b.done else ("error" if self._error() is not None else "done")
        return f"<{type(self).__name__} {b.topic}-{b.partition} #{self._index} {state}>"

    _repr = __repr__  # what the C type's repr calls


class AsyncRecordFuture(RecordFuture):
    """The asyncio producer's future: ``await`` it for the RecordMetadata.

    ``result()`` does not block: before the batch is done it raises
    :class:`~kafkalite.errors.IllegalStateError` (like ``asyncio.Future.result``).

    Example::

        future = await producer.send("orders", b"v")
        metadata = await future                # the RecordMetadata, or the send's error
        assert metadata.partition in (0, 1, 2)
    """

    __slots__ = ()

    def _wait(self, timeout: float | None) -> None:
        if not self._batch.done:
            raise IllegalStateError("the record is not acknowledged yet; await the future")

    def __await__(self) -> Generator[Any, None, RecordMetadata]:
        b = self._batch
        if not b.done:
            yield from b.async_waiter().__await__()
        error = self._error()
        if error is not None:
            raise error
        return self._metadata()

    _await = __await__  # what the C type's await calls

    async def wait(self, timeout: float | None = None) -> RecordMetadata:
        """Await the metadata for at most ``timeout`` seconds (KafkaTimeoutError).

        Example::

            future = await producer.send("orders", b"v")
            metadata = await future.wait(timeout=10)
            assert metadata.offset >= 0
        """
        if timeout is None or self._batch.done:
            return await self
        b = self._batch
        try:
            await asyncio.wait_for(asyncio.shield(b.async_waiter()), timeout)
        except asyncio.TimeoutError:
            raise KafkaTimeoutError(f"send to {b.topic}-{b.partition} did not complete within {timeout:.3f}s") from None
        return await self


if CRecordFuture is not None and not TYPE_CHECKING:
    # One future is made per record: with the C extension the futures are C objects
    # (allocated from a freelist, no per-instance class machinery) that get the
    # methods defined above. Same names, same behaviour.
    install_methods(CRecordFuture, dict(RecordFuture.__dict__))
    install_methods(CAsyncRecordFuture, dict(AsyncRecordFuture.__dict__))
    RecordFuture = CRecordFuture
    AsyncRecordFuture = CAsyncRecordFuture


def describe_error(error: BaseException) -> str:
    """Text for logs: ``KafkaError`` str, or the exception's repr."""
    return str(error) if isinstance(error, KafkaError) else repr(error)


class SendManyResult:
    """The outcome of one :meth:`kafkalite.Producer.send_many` call: every record's, as a whole.

    It holds one entry per run of records that went into the same batch (no object
    per record). ``result(timeout)`` waits until every record is acknowledged or
    failed and raises the first failure (in the order the records were given);
    ``exception(timeout)`` returns it instead; ``failures()`` lists
    ``(index in values, error)`` for every failed record.

    Example::

        outcome = producer.send_many("events", [b"a", b"b", b"c"])
        producer.flush()
        outcome.result()          # 3, or raises the first record's error
    """

    __slots__ = ("_spans", "count")

    def __init__(self, spans: list[tuple[ProducerBatch, int, int]], count: int) -> None:
        self._spans = spans
        self.count = count

    def __len__(self) -> int:
        return self.count

    def _runs(self) -> Generator[tuple[ProducerBatch, int, int, int], None, None]:
        """(batch, first index in batch, first index in values, records) per run."""
        spans = self._spans
        for n, (batch, index, start) in enumerate(spans):
            end = spans[n + 1][2] if n + 1 < len(spans) else self.count
            yield batch, index, start, end - start

    def done(self) -> bool:
        """Whether every record is acknowledged or failed.

        Example::

            outcome = producer.send_many("orders", [b"a", b"b"])
            producer.flush()
            assert outcome.done()
        """
        return all(batch.done for batch, _, _ in self._spans)

    def _wait(self, timeout: float | None) -> None:
        pending = [b for b, _, _ in self._spans if not b.done]
        if not pending:
            return
        pending[0].signal.wait_until(lambda: all(b.done for b in pending), timeout,
                                     f"send_many() of {self.count} records")

    def failures(self, timeout: float | None = None) -> list[tuple[int, BaseException]]:
        """``(index in values, error)`` of every failed record, after waiting for all.

        Example::

            outcome = producer.send_many("orders", [b"a", b"b"])
            assert outcome.failures(timeout=10) == []      # [(index, error), ...]
        """
        self._wait(timeout)
        out: list[tuple[int, BaseException]] = []
        for batch, index, start, count in self._runs():
            if not batch.children:
                if batch.error is not None:
                    out.extend((start + i, batch.error) for i in range(count))
                continue
            for i in range(count):  # split after MESSAGE_TOO_LARGE: resolve each record
                error = resolve(batch, index + i)[0].error
                if error is not None:
                    out.append((start + i, error))
        return out

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The first failed record's error (None if all succeeded), waiting up to ``timeout`` s.

        Example::

            outcome = producer.send_many("orders", [b"a", b"b"])
            assert outcome.exception(timeout=10) is None
        """
        failed = self.failures(timeout)
        return failed[0][1] if failed else None

    def result(self, timeout: float | None = None) -> int:
        """Wait for every record; raise the first failure, else return the number of records.

        Example::

            assert producer.send_many("orders", [b"a", b"b", b"c"]).result(timeout=10) == 3
        """
        error = self.exception(timeout)
        if error is not None:
            raise error
        return self.count

    def __repr__(self) -> str:
        return f"<SendManyResult {self.count} records {'done' if self.done() else 'pending'}>"


class AsyncSendManyResult(SendManyResult):
    """The asyncio producer's :class:`~kafkalite.producer.futures.SendManyResult`.

    ``await`` it for the number of records (raising the first failure), or
    ``await outcome.wait(timeout)``; ``result()``, ``exception()`` and ``failures()``
    do not block: before every record is acknowledged or failed they raise
    :class:`~kafkalite.errors.IllegalStateError` (like ``asyncio.Future.result``).

    Example::

        outcome = await producer.send_many("events", [b"a", b"b", b"c"])
        await outcome          # 3, or raises the first record's error
    """

    __slots__ = ()

    def _wait(self, timeout: float | None) -> None:
        if not self.done():
            raise IllegalStateError(f"the {self.count} records of send_many() are not all acknowledged yet; "
                                    "await the result")

    async def _wait_batches(self) -> None:
        for batch, _, _ in self._spans:
            if not batch.done:
                await batch.async_waiter()

    def __await__(self) -> Generator[Any, None, int]:
        yield from self._wait_batches().__await__()
        return self.result()

    async def wait(self, timeout: float | None = None) -> int:
        """Await every record for at most ``timeout`` seconds (KafkaTimeoutError), then as ``await``.

        Example::

            outcome = await producer.send_many("orders", [b"a", b"b"])
            assert await outcome.wait(timeout=10) == 2
        """
        try:
            await asyncio.wait_for(self._wait_batches(), timeout)
        except asyncio.TimeoutError:
            raise KafkaTimeoutError(f"send_many() of {self.count} records did not complete within "
                                    f"{timeout:.3f}s") from None
        return self.result()


def many_args(values: Iterable[Any], keys: Iterable[Any] | None) -> tuple[Sequence[Any], Sequence[Any] | None]:
    """send_many()'s values and keys as sequences (lists and tuples as they are), one key
    per value."""
    if not isinstance(values, (list, tuple)):
        values = list(values)
    if keys is not None:
        if not isinstance(keys, (list, tuple)):
            keys = list(keys)
        if len(keys) != len(values):
            raise InvalidArgumentError(f"send_many(): {len(keys)} keys for {len(values)} values")
    return values, keys
