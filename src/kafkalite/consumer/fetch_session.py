"""Incremental fetch sessions (KIP-227), one per broker: a state machine with no I/O.

A consumer that fetches many partitions from one broker would resend all of them in
every Fetch request. With a fetch session the broker remembers the partitions and
their fetch offsets; each later ("incremental") request carries only the partitions
whose fetch parameters changed, plus the ones to forget, and the response carries only
partitions that have news. The session is identified by ``session_id`` and requests are
ordered by ``epoch`` (0 opens a session, then 1, 2, ... wrapping to 1; -1 is
"no session").

The broker does not move a session partition's fetch offset by itself, so a partition
whose data was returned must be sent again with its new offset (it is "altered"), and
a partition the consumer does not want right now (paused, enough data buffered) must be
forgotten, or the broker would return the same records again.

:class:`FetchSessionHandler` builds the partition lists for the next request and
digests the response's session fields; errors reset it to a full request.

Example::

    handler = FetchSessionHandler(node_id=1)
    plan = handler.build({tp: PartitionFetchData(topic_id, 0, 1048576, 5)})
    # send plan.to_send / plan.forgotten with plan.session_id / plan.epoch
    handler.handle_response(response.error_code, response.session_id)
"""

from __future__ import annotations

import uuid
from typing import NamedTuple

from kafkalite.types import TopicPartition

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_EPOCH_MAX = 2**31 - 1
_FETCH_SESSION_ID_NOT_FOUND = 70
_INVALID_FETCH_SESSION_EPOCH = 71


class PartitionFetchData(NamedTuple):
    """What a Fetch request says about one partition."""

    topic_id: uuid.UUID
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1


class FetchPlan(NamedTuple):
    """The session fields and partition lists of the next Fetch request."""

    session_id: int
    epoch: int
    full: bool
    to_send: dict[TopicPartition, PartitionFetchData]
    forgotten: list[tuple[TopicPartition, uuid.UUID]]
    #: every partition the request covers (sent or already in the session)
    wanted: dict[TopicPartition, PartitionFetchData]


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch`` (wraps to 1; 0 is reserved for opening a session)."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch >= _EPOCH_MAX else epoch + 1


class FetchSessionHandler:
    """The client side of one broker's fetch session.

    Args:
        node_id: the broker (for messages).
        enabled: False sends sessionless full fetches (epoch -1), e.g. for brokers
            whose fetch version predates KIP-227.
    """

    def __init__(self, node_id: int, enabled: bool = True) -> None:
        self.node_id = node_id
        self.enabled = enabled
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH if enabled else FINAL_EPOCH
        #: what the broker's session holds now
        self.session: dict[TopicPartition, PartitionFetchData] = {}
        self._pending: FetchPlan | None = None

    @property
    def is_full(self) -> bool:
        """Whether the next request is a full one (opening or not using a session)."""
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)

    def build(self, wanted: dict[TopicPartition, PartitionFetchData]) -> FetchPlan:
        """Plan the next request for the partitions the consumer wants now."""
        if self.is_full:
            plan = FetchPlan(self.session_id if self.enabled else INVALID_SESSION_ID, self.epoch, True,
                             dict(wanted), [], dict(wanted))
        else:
            to_send: dict[TopicPartition, PartitionFetchData] = {}
            forgotten: list[tuple[TopicPartition, uuid.UUID]] = []
            for tp, data in wanted.items():
                old = self.session.get(tp)
                if old != data:
                    to_send[tp] = data
                    if old is not None and old.topic_id != data.topic_id:
                        forgotten.append((tp, old.topic_id))  # the topic was recreated
            for tp, old in self.session.items():
                if tp not in wanted:
                    forgotten.append((tp, old.topic_id))
            plan = FetchPlan(self.session_id, self.epoch, False, to_send, forgotten, dict(wanted))
        self._pending = plan
        return plan

    def handle_response(self, error_code: int, session_id: int) -> bool:
        """Digest a response's top-level error and session id; False if it failed."""
        plan, self._pending = self._pending, None
        if not self.enabled:
            return error_code == 0
        if error_code:
            if error_code == _FETCH_SESSION_ID_NOT_FOUND:
                self._reset(close_existing=False)
            else:
                # INVALID_FETCH_SESSION_EPOCH and any other top-level error: the session's
                # state is unknown; close it and open a new one with the next request.
                self._reset(close_existing=True)
            return False
        if plan is None:
            return True
        if session_id == INVALID_SESSION_ID:
            # The broker did not create (or closed) the session: fetch in full next time.
            self._reset(close_existing=False)
            return True
        if plan.full and session_id < 0:
            # Brokers hand out positive session ids (Kafka's FetchSessionCacheShard draws
            # them from its shard's range of 1..2^31-1): a negative one was damaged on the
            # way. Adopting it would be for good: the full request that closes it after an
            # error names it again, and Kafka then fails every Fetch of ours with
            # UNKNOWN_SERVER_ERROR (FetchSessionCache.getCacheShard indexes its shards
            # with the id). The data is fine; no session: fetch in full next time.
            self._reset(close_existing=False)
            return True
        if plan.full:
            self.session_id = session_id
            self.epoch = 1
        else:
            self.epoch = next_epoch(self.epoch)
        self.session = dict(plan.wanted)
        return True

    def handle_error(self) -> None:
        """The request failed without a response (connection lost, timeout)."""
        self._pending = None
        if self.enabled:
            self._reset(close_existing=True)

    def _reset(self, close_existing: bool) -> None:
        if not close_existing:
            self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self.session = {}
