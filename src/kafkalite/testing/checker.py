"""A delivery checker: what producers were told, against what an independent reader finds.

Modelled on Jepsen's Kafka checker and Kafka's own system tests: every record carries a
unique id (``<producer>:<sequence>``, in a header or at the front of the value); the
producers' outcomes are recorded as they arrive (acknowledged, failed with an unknown
outcome, part of a committed or an aborted transaction); then a fresh consumer (no
group, ``read_committed`` where transactions are involved) reads every partition from
its beginning to its end offset and the checker reports, per partition:

* **lost**: acknowledged (or committed) records that were never read;
* **duplicated**: records read more than once;
* **reordered**: records read after one their producer sent later (same partition);
* **aborted_visible**: records of aborted transactions that the reader saw;
* **unexpected**: records without an id, or with one no producer handed out;
* **ambiguous**: sends whose outcome is unknown (a timeout, a lost connection): never
  counted as lost; reported with how many of them were read.

Memory is a few bytes per record (status, partition and offset in compact arrays), so
runs of millions of records are fine.

Example::

    from kafkalite import Producer
    from kafkalite.testing.checker import Checker

    checker = Checker()
    history = checker.producer("p1")
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for i in range(100_000):
            record_id = history.next_id()
            producer.send("orders", b"payload", headers=[checker.header(record_id)],
                          callback=history.callback(record_id))
    report = checker.verify(bootstrap, ["orders"])
    assert report.ok, report        # prints the per-partition table on failure
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkalite.types import RecordMetadata, TopicPartition

__all__ = ["ID_HEADER", "CheckReport", "Checker", "PartitionCounts", "ProducerHistory", "make_id", "parse_id"]

#: The header that carries a record's id (``checker.header(record_id)``).
ID_HEADER = "kafkalite-check-id"
_SEP = b"|"  # between an id and the rest of the value, for ids carried in values

# What a producer knows of each record it sent (one byte per record).
SENT, ACKED, AMBIGUOUS, FAILED, TXN_ACKED, ABORTED = range(6)
_NO_PARTITION = 0xFFFF


def make_id(producer: int, sequence: int) -> bytes:
    """The id of a producer's ``sequence``-th record: ``b"<producer>:<sequence>"``.

    Example::

        from kafkalite.testing.checker import make_id
        assert make_id(3, 17) == b"3:17"
    """
    return b"%d:%d" % (producer, sequence)


def parse_id(data: bytes | None) -> tuple[int, int] | None:
    """``(producer, sequence)`` of an id (or of a value starting with ``id|``); None if
    it is not one.

    Example::

        from kafkalite.testing.checker import parse_id
        assert parse_id(b"3:17") == (3, 17) and parse_id(b"3:17|payload") == (3, 17) and parse_id(b"no id") is None
    """
    if not data:
        return None
    head = data.split(_SEP, 1)[0]
    producer, sep, sequence = head.partition(b":")
    if not sep or not producer.isdigit() or not sequence.isdigit():
        return None
    return int(producer), int(sequence)


class ProducerHistory:
    """What one producer sent, in send order, and what it was told about each record.

    Thread-safe for one sending thread plus the producer's callback thread.

    Example::

        history = Checker().producer("p1")
        record_id = history.next_id()
        history.acked(record_id, "orders", 0, 41)
    """

    def __init__(self, checker: Checker, index: int, name: str) -> None:
        self.checker = checker
        self.index = index
        self.name = name
        self.status = bytearray()
        self.partition = array("H")  # index into checker.partitions
        self.offset = array("q")
        self._txn: list[int] | None = None

    def __len__(self) -> int:
        return len(self.status)

    def next_id(self) -> bytes:
        """Hand out the id of the next record this producer sends (in send order).

        Example::

            from kafkalite.testing.checker import parse_id
            history = Checker().producer()
            assert parse_id(history.next_id())[1] == 0      # (producer, sequence)
        """
        sequence = len(self.status)
        self.partition.append(_NO_PARTITION)
        self.offset.append(-1)
        self.status.append(SENT)
        if self._txn is not None:
            self._txn.append(sequence)
        return make_id(self.index, sequence)

    def _sequence(self, record_id: bytes | int) -> int:
        if isinstance(record_id, int):
            return record_id
        parsed = parse_id(record_id)
        if parsed is None or parsed[0] != self.index:
            raise ValueError(f"{record_id!r} is not an id of producer {self.name!r}")
        return parsed[1]

    def acked(self, record_id: bytes | int, topic: str, partition: int, offset: int) -> None:
        """The broker acknowledged the record at ``offset`` (in a transaction: written,
        committed only with :meth:`commit_transaction`).

        Example::

            checker = Checker()
            history = checker.producer()
            record_id = history.next_id()
            history.acked(record_id, "t", 0, 7)
            checker.observe("t", 0, 7, b"", headers=[checker.header(record_id)])
            assert checker.report().ok
        """
        seq = self._sequence(record_id)
        self.partition[seq] = self.checker._tp_index(TopicPartition(topic, partition))
        self.offset[seq] = offset
        self.status[seq] = TXN_ACKED if self._txn is not None else ACKED

    def failed(self, record_id: bytes | int, *, definite: bool = False) -> None:
        """The send failed. Unless ``definite`` (it cannot have been written), the outcome
        is unknown: a timeout or a lost connection may follow a write.

        Example::

            checker = Checker()
            history = checker.producer()
            history.failed(history.next_id())               # a timeout: written or not, nobody knows
            assert checker.report().ok                      # ambiguous, never counted as lost
        """
        self.status[self._sequence(record_id)] = FAILED if definite else AMBIGUOUS

    def callback(self, record_id: bytes) -> Callable[[RecordMetadata, BaseException | None], None]:
        """A ``send(callback=...)`` that records the outcome of ``record_id``.

        Example::

            checker = Checker()
            history = checker.producer()
            record_id = history.next_id()
            producer.send("checked", b"x", headers=[checker.header(record_id)], callback=history.callback(record_id))
            producer.flush()
            assert checker.verify(bootstrap, ["checked"]).total.acked == 1
        """
        seq = self._sequence(record_id)

        def done(metadata: RecordMetadata, error: BaseException | None) -> None:
            if error is None:
                self.acked(seq, metadata.topic, metadata.partition, metadata.offset)
            else:
                self.failed(seq)
        return done

    # -- transactions

    def begin_transaction(self) -> None:
        """Records from here until commit / abort belong to one transaction.

        Example::

            checker = Checker()
            history = checker.producer()
            history.begin_transaction()
            record_id = history.next_id()
            history.acked(record_id, "t", 0, 0)
            history.commit_transaction()
            checker.observe("t", 0, 0, b"", headers=[checker.header(record_id)])
            assert checker.report().ok
        """
        self._txn = []

    def commit_transaction(self, *, outcome_known: bool = True) -> None:
        """The commit succeeded (``outcome_known=False``: it raised a timeout or another
        error that leaves the outcome unknown: the records are ambiguous).

        Example::

            checker = Checker()
            history = checker.producer()
            history.begin_transaction()
            history.acked(history.next_id(), "t", 0, 0)
            history.commit_transaction(outcome_known=False)   # the commit timed out: maybe committed
            assert checker.report().total.lost == 0
        """
        for seq in self._end_transaction():
            if outcome_known and self.status[seq] in (TXN_ACKED, SENT):
                self.status[seq] = ACKED
            elif self.status[seq] != FAILED:
                self.status[seq] = AMBIGUOUS

    def abort_transaction(self) -> None:
        """The transaction was aborted: none of its records may be visible.

        Example::

            checker = Checker()
            history = checker.producer()
            history.begin_transaction()
            history.acked(history.next_id(), "t", 0, 0)
            history.abort_transaction()                     # none of its records may be read
            assert checker.report().ok
        """
        for seq in self._end_transaction():
            self.status[seq] = ABORTED

    def _end_transaction(self) -> list[int]:
        if self._txn is None:
            raise RuntimeError(f"producer {self.name!r} has no open transaction")
        txn, self._txn = self._txn, None
        return txn


@dataclass
class PartitionCounts:
    """One partition's figures.

    Example::

        from kafkalite.testing.checker import PartitionCounts
        counts = PartitionCounts(read=10, acked=10, duplicated=1)
        assert counts.problems == 1
    """

    read: int = 0
    acked: int = 0
    lost: int = 0
    duplicated: int = 0
    reordered: int = 0
    aborted_visible: int = 0
    unexpected: int = 0
    ambiguous: int = 0
    ambiguous_read: int = 0

    @property
    def problems(self) -> int:
        """Lost + duplicated + reordered + aborted-but-visible + unexpected records.

        Example::

            from kafkalite.testing.checker import PartitionCounts
            assert PartitionCounts(lost=2, reordered=1).problems == 3
        """
        return self.lost + self.duplicated + self.reordered + self.aborted_visible + self.unexpected


@dataclass
class CheckReport:
    """What the checker found: per partition, in total, and a few example ids each.

    Example::

        checker = Checker()
        history = checker.producer()
        history.acked(history.next_id(), "t", 0, 0)
        report = checker.report()
        print(report)                                   # a table per partition, with example ids
    """

    partitions: dict[TopicPartition, PartitionCounts]
    examples: dict[str, list[str]] = field(default_factory=dict)
    read_committed: bool = True
    seconds: float = 0.0

    @property
    def total(self) -> PartitionCounts:
        """The counts of every partition added up.

        Example::

            checker = Checker()
            history = checker.producer()
            history.acked(history.next_id(), "t", 0, 0)
            history.acked(history.next_id(), "t", 1, 0)
            assert checker.report().total.acked == 2
        """
        out = PartitionCounts()
        for counts in self.partitions.values():
            for name in vars(out):
                setattr(out, name, getattr(out, name) + getattr(counts, name))
        return out

    @property
    def ok(self) -> bool:
        """Nothing lost, duplicated, reordered, aborted-but-visible or unexpected.

        Example::

            assert Checker().report().ok                    # nothing sent, nothing read
        """
        return self.total.problems == 0

    def __str__(self) -> str:
        cols = ["read", "acked", "lost", "duplicated", "reordered", "aborted_visible", "unexpected",
                "ambiguous", "ambiguous_read"]
        rows = [[f"{tp.topic}-{tp.partition}", *(str(getattr(c, k)) for k in cols)]
                for tp, c in sorted(self.partitions.items())]
        total = self.total
        rows.append(["total", *(str(getattr(total, k)) for k in cols)])
        header = ["partition", *cols]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        lines = ["  ".join(v.rjust(w) if i else v.ljust(w) for i, (v, w) in enumerate(zip(r, widths)))
                 for r in [header, *rows]]
        verdict = "OK" if self.ok else "PROBLEMS"
        lines.insert(0, f"delivery check: {verdict} ({'read_committed' if self.read_committed else 'read_uncommitted'}"
                        f" reader, {self.seconds:.1f} s)")
        for kind, ids in sorted(self.examples.items()):
            if ids:
                lines.append(f"  {kind}: {', '.join(ids)}")
        return "\n".join(lines)


class Checker:
    """Records what producers sent and checks it against what a reader reads.

    Example::

        checker = Checker()
        history = checker.producer("p1")
        for _ in range(10):
            record_id = history.next_id()
            producer.send("checked", b"x", headers=[checker.header(record_id)], callback=history.callback(record_id))
        producer.flush()
        assert checker.verify(bootstrap, ["checked"]).ok
    """

    def __init__(self, *, examples: int = 10) -> None:
        self.producers: list[ProducerHistory] = []
        self.partitions: list[TopicPartition] = []
        self._tp_indexes: dict[TopicPartition, int] = {}
        self._examples = examples
        self._reset_reading()

    # -- producing

    def producer(self, name: str | None = None) -> ProducerHistory:
        """A new producer history (one per producer, or per producer session).

        Example::

            checker = Checker()
            first, second = checker.producer("before restart"), checker.producer("after restart")
            assert first.next_id() != second.next_id()
        """
        history = ProducerHistory(self, len(self.producers), name or f"producer-{len(self.producers)}")
        self.producers.append(history)
        return history

    @staticmethod
    def header(record_id: bytes) -> tuple[str, bytes]:
        """The header that carries ``record_id``: ``send(..., headers=[checker.header(id)])``.

        Example::

            checker = Checker()
            history = checker.producer()
            record_id = history.next_id()
            producer.send("checked", b"x", headers=[checker.header(record_id)], callback=history.callback(record_id))
            producer.flush()
            assert checker.verify(bootstrap, ["checked"]).total.read == 1
        """
        return (ID_HEADER, record_id)

    @staticmethod
    def value(record_id: bytes, payload: bytes = b"") -> bytes:
        """A value carrying ``record_id`` in front of ``payload`` (for clients that cannot
        set headers); the reader finds either form.

        Example::

            checker = Checker()
            history = checker.producer()
            record_id = history.next_id()
            producer.send("checked", checker.value(record_id, b"payload"), callback=history.callback(record_id))
            producer.flush()
            assert checker.verify(bootstrap, ["checked"]).ok      # the id is found in the value
        """
        return record_id + _SEP + payload

    def _tp_index(self, tp: TopicPartition) -> int:
        index = self._tp_indexes.get(tp)
        if index is None:
            index = self._tp_indexes[tp] = len(self.partitions)
            self.partitions.append(tp)
        return index

    # -- reading

    def _reset_reading(self) -> None:
        self._seen: list[bytearray] = []
        self._last: dict[tuple[int, int], int] = {}
        self._counts: dict[int, PartitionCounts] = {}
        self._example_ids: dict[str, list[str]] = {}

    def _example(self, kind: str, text: str) -> None:
        found = self._example_ids.setdefault(kind, [])
        if len(found) < self._examples:
            found.append(text)

    def observe(self, topic: str, partition: int, offset: int, value: bytes | None,
                headers: Sequence[tuple[str, bytes | None]] | None = None) -> None:
        """One record the reader read (in offset order per partition).

        Example::

            checker = Checker()
            history = checker.producer()
            record_id = history.next_id()
            history.acked(record_id, "t", 0, 0)
            checker.observe("t", 0, 0, b"", headers=[checker.header(record_id)])   # what your own reader read
            assert checker.report().ok
        """
        tp_index = self._tp_index(TopicPartition(topic, partition))
        counts = self._counts.get(tp_index)
        if counts is None:
            counts = self._counts[tp_index] = PartitionCounts()
        counts.read += 1
        raw = None
        for key, header_value in headers or ():
            if key == ID_HEADER:
                raw = header_value
                break
        parsed = parse_id(raw if raw is not None else value)
        if parsed is None or parsed[0] >= len(self.producers) or parsed[1] >= len(self.producers[parsed[0]]):
            counts.unexpected += 1
            self._example("unexpected", f"{topic}-{partition}@{offset}")
            return
        producer, seq = parsed
        history = self.producers[producer]
        while len(self._seen) <= producer:
            self._seen.append(bytearray())
        seen = self._seen[producer]
        if len(seen) < len(history):
            seen.extend(bytes(len(history) - len(seen)))
        before = seen[seq]
        if before < 255:
            seen[seq] = before + 1
        if before:
            counts.duplicated += 1
            self._example("duplicated", f"{history.name}:{seq} again at {topic}-{partition}@{offset}")
        else:
            last = self._last.get((producer, tp_index), -1)
            if seq < last:
                counts.reordered += 1
                self._example("reordered", f"{history.name}:{seq} after {history.name}:{last} at "
                                           f"{topic}-{partition}@{offset}")
            self._last[(producer, tp_index)] = max(last, seq)
        if history.partition[seq] == _NO_PARTITION:
            history.partition[seq] = tp_index  # never acknowledged: where it turned up
        if history.status[seq] == ABORTED:
            counts.aborted_visible += 1
            self._example("aborted_visible", f"{history.name}:{seq} at {topic}-{partition}@{offset}")

    def report(self, *, read_committed: bool = True, seconds: float = 0.0) -> CheckReport:
        """The figures from what was observed since the last report.

        Example::

            checker = Checker()
            history = checker.producer()
            history.acked(history.next_id(), "t", 0, 0)
            report = checker.report()                       # nothing was observed: the record is lost
            assert not report.ok and report.total.lost == 1
        """
        counts = self._counts
        for producer, history in enumerate(self.producers):
            seen = self._seen[producer] if producer < len(self._seen) else bytearray()
            if len(seen) < len(history):
                seen = seen + bytes(len(history) - len(seen))
            status, partition, offset = history.status, history.partition, history.offset
            for seq in range(len(status)):
                state = status[seq]
                if state == ACKED:
                    tp_index = partition[seq]
                    c = counts.get(tp_index)
                    if c is None:
                        c = counts[tp_index] = PartitionCounts()
                    c.acked += 1
                    if not seen[seq]:
                        c.lost += 1
                        tp = self.partitions[tp_index]
                        self._example("lost", f"{history.name}:{seq} (acked at {tp.topic}-{tp.partition}"
                                              f"@{offset[seq]})")
                elif state in (AMBIGUOUS, SENT, TXN_ACKED):
                    tp_index = partition[seq]
                    c = counts.get(tp_index)
                    if c is None:
                        c = counts[tp_index] = PartitionCounts()
                    c.ambiguous += 1
                    c.ambiguous_read += 1 if seen[seq] else 0
        partitions = {self.partitions[i] if i != _NO_PARTITION else TopicPartition("(never acknowledged)", -1): c
                      for i, c in counts.items()}
        report = CheckReport(partitions, dict(self._example_ids), read_committed, seconds)
        self._reset_reading()
        return report

    def verify(self, bootstrap_or_config: str | Mapping[str, Any], topics: Iterable[str], *,
               read_committed: bool = True, timeout: float = 300.0) -> CheckReport:
        """Read ``topics`` from the beginning to their end offsets with a fresh consumer
        (no group; ``read_committed`` by default) and report.

        ``bootstrap_or_config``: a bootstrap address or consumer settings (security ...).
        Raises :class:`~kafkalite.errors.KafkaTimeoutError` if the reader cannot reach the
        end offsets within ``timeout`` seconds.

        Example::

            checker = Checker()
            history = checker.producer()
            for _ in range(3):
                record_id = history.next_id()
                producer.send("checked", b"x", headers=[checker.header(record_id)], callback=history.callback(record_id))
            producer.flush()
            report = checker.verify(bootstrap, ["checked"], read_committed=False, timeout=60)
            assert report.ok and report.total.read == 3
        """
        started = time.monotonic()
        read_back(bootstrap_or_config, topics, self.observe, read_committed=read_committed, timeout=timeout)
        return self.report(read_committed=read_committed, seconds=time.monotonic() - started)


def read_back(bootstrap_or_config: str | Mapping[str, Any], topics: Iterable[str],
              observe: Callable[..., None], *, read_committed: bool = True, timeout: float = 300.0) -> None:
    """Feed every record of ``topics`` (beginning to end offsets) to ``observe(topic,
    partition, offset, value, headers)``, with a fresh assign()ed consumer."""
    from kafkalite import Consumer
    from kafkalite.errors import KafkaTimeoutError

    config: dict[str, Any] = {"bootstrap.servers": bootstrap_or_config} if isinstance(bootstrap_or_config, str) \
        else dict(bootstrap_or_config)
    config.update({"isolation.level": "read_committed" if read_committed else "read_uncommitted",
                   "enable.auto.commit": False, "auto.offset.reset": "earliest",
                   "max.poll.records": 10_000})
    config.pop("group.id", None)
    deadline = time.monotonic() + timeout
    with Consumer(config) as consumer:
        partitions = sorted(tp for t in topics
                            for tp in consumer.partitions_for(t, timeout=max(1.0, deadline - time.monotonic())))
        consumer.assign(partitions)
        consumer.seek_to_beginning(partitions)
        ends = consumer.end_offsets(partitions, timeout=max(1.0, deadline - time.monotonic()))
        remaining = {tp for tp in partitions if ends[tp] > 0}
        while remaining:
            if time.monotonic() > deadline:
                where = {f"{tp.topic}-{tp.partition}": (consumer.position(tp), ends[tp]) for tp in sorted(remaining)}
                raise KafkaTimeoutError(f"the checker's reader did not reach the end offsets within {timeout} s "
                                        f"(position, end): {where}")
            for record in consumer.poll(0.5):
                if record.offset < ends[TopicPartition(record.topic, record.partition)]:
                    observe(record.topic, record.partition, record.offset, record.value, record.headers)
            for tp in list(remaining):
                if consumer.position(tp) >= ends[tp]:
                    remaining.discard(tp)
