"""Acknowledgements of one partition and their wire form (no I/O).

A share consumer settles every record it was given (KIP-932): ACCEPT, RELEASE, REJECT,
or GAP for acquired offsets that held no record. :class:`Acknowledgements` collects
``offset -> type`` for one partition; :meth:`Acknowledgements.batches` turns them into
the ``AcknowledgementBatches`` of ShareFetch / ShareAcknowledge: runs of consecutive
offsets, each with one type for the whole run when every offset in it has the same type
(as Java's ``Acknowledgements.getAcknowledgementBatches`` optimises), else one type per
offset.

Example::

    acks = Acknowledgements()
    acks.add(10, AcknowledgeType.ACCEPT); acks.add(11, AcknowledgeType.ACCEPT)
    acks.add(12, AcknowledgeType.RELEASE); acks.add(20, AcknowledgeType.ACCEPT)
    acks.batches()   # [(10, 12, [1, 1, 2]), (20, 20, [1])]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from kafkalite.share.types import AcknowledgeType
from kafkalite.types import TopicPartition

#: A run this long of one type inside a mixed run is sent as a batch of its own (one
#: type byte instead of one per offset), as Java does past 10 records.
_SPLIT_RUN = 10


class AckBatch(NamedTuple):
    first_offset: int
    last_offset: int
    types: list[int]


class Acknowledgements:
    """``offset -> AcknowledgeType`` for one partition (a later add for an offset wins)."""

    __slots__ = ("types",)

    def __init__(self) -> None:
        self.types: dict[int, AcknowledgeType] = {}

    def add(self, offset: int, ack_type: AcknowledgeType) -> None:
        self.types[offset] = ack_type

    def merge(self, other: Acknowledgements) -> Acknowledgements:
        self.types.update(other.types)
        return self

    def __len__(self) -> int:
        return len(self.types)

    def __bool__(self) -> bool:
        return bool(self.types)

    def offsets(self) -> set[int]:
        return set(self.types)

    def count(self, ack_type: AcknowledgeType) -> int:
        return sum(1 for t in self.types.values() if t is ack_type)

    def __repr__(self) -> str:
        return f"Acknowledgements({len(self.types)} offsets)"

    def batches(self) -> list[AckBatch]:
        """The wire form: consecutive runs; a single type per run when uniform."""
        out: list[AckBatch] = []
        for first, types in _runs(self.types):
            out.extend(_optimise(first, types))
        return out


def _runs(types: dict[int, AcknowledgeType]) -> Iterator[tuple[int, list[int]]]:
    first = prev = None
    run: list[int] = []
    for offset in sorted(types):
        if prev is not None and offset == prev + 1:
            run.append(int(types[offset]))
        else:
            if first is not None:
                yield first, run
            first, run = offset, [int(types[offset])]
        prev = offset
    if first is not None:
        yield first, run


def _optimise(first: int, types: list[int]) -> list[AckBatch]:
    if all(t == types[0] for t in types):
        return [AckBatch(first, first + len(types) - 1, [types[0]])]
    out: list[AckBatch] = []
    start = 0  # start of the pending mixed part
    i = 0
    n = len(types)
    while i < n:
        j = i
        while j + 1 < n and types[j + 1] == types[i]:
            j += 1
        if j - i + 1 >= _SPLIT_RUN:
            if start < i:
                out.append(AckBatch(first + start, first + i - 1, types[start:i]))
            out.append(AckBatch(first + i, first + j, [types[i]]))
            start = j + 1
        i = j + 1
    if start < n:
        part = types[start:]
        out.append(AckBatch(first + start, first + n - 1,
                            [part[0]] if all(t == part[0] for t in part) else part))
    return out


class AckOutcome(NamedTuple):
    """What became of one partition's acknowledgements: ``error`` is None when the
    broker applied them all."""

    partition: TopicPartition
    offsets: frozenset[int]
    error: BaseException | None
