"""The records the last ``poll()`` handed out, until they are acknowledged (poll side, no I/O).

Java's ``ShareFetch`` / ``ShareInFlightBatch``: every record returned by ``poll()`` is
*in flight* until the application settles it (explicit mode) or the next
``poll()`` / commit accepts it (implicit mode). Acknowledgements wait here, grouped by
the broker that delivered the records — a record can only be acknowledged through the
share session that acquired it — until a ShareFetch or ShareAcknowledge takes them.

Example::

    flight = InFlight()
    flight.add(node=1, records=polled)
    flight.acknowledge("orders", 0, 42, AcknowledgeType.RELEASE)
    flight.acknowledge_all(AcknowledgeType.ACCEPT)          # implicit mode
    by_node = flight.take_acknowledged()                     # {1: {tp: Acknowledgements}}
"""

from __future__ import annotations

from collections.abc import Iterable

from kafkalite.errors import IllegalStateError
from kafkalite.share.acks import Acknowledgements
from kafkalite.share.types import AcknowledgeType, ShareConsumerRecord
from kafkalite.types import TopicPartition

AcksByNode = dict[int, dict[TopicPartition, Acknowledgements]]


class InFlight:
    """Delivered, unacknowledged records and the acknowledgements not yet sent."""

    __slots__ = ("_acks", "_count", "_pending")

    def __init__(self) -> None:
        #: partition -> {offset: node} for every record still unacknowledged
        self._pending: dict[TopicPartition, dict[int, int]] = {}
        self._count = 0
        self._acks: AcksByNode = {}

    def __len__(self) -> int:
        """How many delivered records are not acknowledged yet."""
        return self._count

    def add(self, node: int, records: Iterable[ShareConsumerRecord]) -> None:
        pending = self._pending
        for r in records:
            tp = TopicPartition(r[6], r[7])
            offsets = pending.get(tp)
            if offsets is None:
                offsets = pending[tp] = {}
            if r[0] not in offsets:
                self._count += 1
            offsets[r[0]] = node

    def _acks_for(self, node: int, tp: TopicPartition) -> Acknowledgements:
        per_node = self._acks.setdefault(node, {})
        acks = per_node.get(tp)
        if acks is None:
            acks = per_node[tp] = Acknowledgements()
        return acks

    def add_ack(self, node: int, tp: TopicPartition, offset: int, ack_type: AcknowledgeType) -> None:
        """An acknowledgement the client makes itself (GAP, REJECT of a corrupt batch,
        RELEASE of a record that could not be deserialized)."""
        offsets = self._pending.get(tp)
        if offsets is not None and offsets.pop(offset, None) is not None:
            self._count -= 1
        self._acks_for(node, tp).add(offset, ack_type)

    def acknowledge(self, topic: str, partition: int, offset: int, ack_type: AcknowledgeType) -> None:
        """Settle one delivered record; IllegalStateError if it is not in flight."""
        tp = TopicPartition(topic, partition)
        offsets = self._pending.get(tp)
        node = offsets.pop(offset, None) if offsets is not None else None
        if node is None:
            raise IllegalStateError(
                f"the record at offset {offset} of {topic}-{partition} cannot be acknowledged: the last "
                "poll() did not return it, or it was acknowledged already", topic=topic, partition=partition)
        self._count -= 1
        self._acks_for(node, tp).add(offset, ack_type)

    def acknowledge_all(self, ack_type: AcknowledgeType) -> None:
        """Settle every record still in flight (implicit mode: ACCEPT)."""
        for tp, offsets in self._pending.items():
            nodes = set(offsets.values())
            if len(nodes) == 1:  # the common case: one broker delivered them all
                self._acks_for(nodes.pop(), tp).types.update(dict.fromkeys(offsets, ack_type))
            else:
                for offset, node in offsets.items():
                    self._acks_for(node, tp).add(offset, ack_type)
        self._pending = {}
        self._count = 0

    def has_acks(self) -> bool:
        return bool(self._acks)

    def take_acknowledged(self) -> AcksByNode:
        """The acknowledgements made so far, by node; they are no longer held here."""
        acks, self._acks = self._acks, {}
        return acks


def merge_acks(into: AcksByNode, more: AcksByNode) -> AcksByNode:
    """Add ``more`` to ``into`` (later types win for the same offset)."""
    for node, per_tp in more.items():
        target = into.setdefault(node, {})
        for tp, acks in per_tp.items():
            if tp in target:
                target[tp].merge(acks)
            else:
                target[tp] = acks
    return into
