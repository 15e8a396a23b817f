"""The rebalance listener: what the application hears when partitions come and go.

Subclass :class:`ConsumerRebalanceListener` (or pass any object with the same methods)
to ``subscribe(..., listener=...)``. Callbacks run in the thread that calls ``poll()``
(for ``kafkalite.aio.Consumer``: in the task that awaits ``poll()``, and they may be
coroutines), never on the engine, so they may call the consumer: commit in
``on_partitions_revoked``, seek in ``on_partitions_assigned``.

Calling rules (as the Java client):

* eager assignors (range, roundrobin, sticky): every rebalance first calls
  ``on_partitions_revoked`` with everything owned (possibly empty), then
  ``on_partitions_assigned`` with the complete new assignment;
* cooperative (cooperative-sticky, and KIP-848 ``group.protocol=consumer``):
  ``on_partitions_revoked`` only with the partitions that move away, and never with an
  empty set; ``on_partitions_assigned`` on every rebalance with the partitions added
  (possibly empty); retained partitions are fetched throughout;
* ``on_partitions_lost`` when the membership was lost (session timeout, fenced,
  max.poll.interval.ms exceeded): the partitions may already belong to another member,
  so do not commit them. The default implementation calls ``on_partitions_revoked``.

Example::

    class SaveOnRevoke(ConsumerRebalanceListener):
        def __init__(self, consumer):
            self.consumer = consumer

        def on_partitions_revoked(self, partitions):
            self.consumer.commit()          # commit what was processed before giving them up

        def on_partitions_assigned(self, partitions):
            print("now reading", sorted(partitions))

    consumer.subscribe(["orders"], listener=SaveOnRevoke(consumer))
"""

from __future__ import annotations

from collections.abc import Awaitable

from kafkalite.types import TopicPartition


class ConsumerRebalanceListener:
    """Base class with no-op callbacks; override the ones you need.

    Example::

        class Logged(ConsumerRebalanceListener):
            def on_partitions_assigned(self, partitions):
                print("assigned", sorted(partitions))

        consumer.subscribe(["orders"], listener=Logged())
        consumer.poll(timeout=10.0)                 # the listener runs inside poll()
    """

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> Awaitable[None] | None:
        """Partitions this member stops owning (after auto-commit, before anyone else gets them).

        Example::

            class CommitOnRevoke(ConsumerRebalanceListener):
                def on_partitions_revoked(self, partitions):
                    consumer.commit_sync()              # before another member takes them over

            consumer.subscribe(["orders"], listener=CommitOnRevoke())
            consumer.poll(timeout=10.0)
        """
        return None

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> Awaitable[None] | None:
        """Partitions this member starts owning (before records of them are returned).

        Example::

            class FromTheStart(ConsumerRebalanceListener):
                def on_partitions_assigned(self, partitions):
                    consumer.seek_to_beginning(partitions)

            consumer.subscribe(["orders"], listener=FromTheStart())
            assert consumer.poll(timeout=10.0)
        """
        return None

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> Awaitable[None] | None:
        """Partitions owned when membership was lost; they may have new owners already.

        Example::

            class Lost(ConsumerRebalanceListener):
                def on_partitions_lost(self, partitions):
                    print("lost without a revocation:", sorted(partitions))   # do not commit for these

            consumer.subscribe(["orders"], listener=Lost())
        """
        return self.on_partitions_revoked(partitions)
