"""The share session with one broker (KIP-932), as a plain state machine.

A share consumer keeps one share session per broker it fetches from, identified by
(group, member id) and numbered by an epoch carried in every ShareFetch and
ShareAcknowledge (Java's ``ShareSessionHandler``):

* epoch 0 opens a session (closing any old one); the request lists every partition.
  Only a ShareFetch can open a session, and the records acquired under an old session
  cannot be acknowledged in the request that opens a new one;
* later requests carry the next epoch (1, 2, ... wrapping to 1) and list only the
  partitions added since (``Topics``) and those to drop (``ForgottenTopicsData``);
* -1 closes the session: the broker applies that request's acknowledgements, then
  releases every record the member still holds;
* SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_LIMIT_REACHED or
  a failed connection start over at epoch 0; any other error still moves the epoch on
  (the broker counted the request).

Example::

    session = ShareSession(node=1)
    plan = session.build_fetch({tp: topic_id})    # plan.epoch == 0, plan.added == [(tp, topic_id)]
    session.on_response(0)                        # next request uses epoch 1
"""

from __future__ import annotations

import uuid
from typing import NamedTuple

from kafkalite.types import TopicPartition

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_MAX_EPOCH = 2**31 - 1
#: SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_LIMIT_REACHED
SESSION_ERRORS = frozenset({122, 123, 133})


class FetchPlan(NamedTuple):
    epoch: int
    added: list[tuple[TopicPartition, uuid.UUID]]
    forgotten: list[tuple[TopicPartition, uuid.UUID]]


def next_epoch(epoch: int) -> int:
    if epoch == FINAL_EPOCH:
        return INITIAL_EPOCH
    return 1 if epoch >= _MAX_EPOCH else epoch + 1


class ShareSession:
    """Client side of one broker's share session (see the module doc)."""

    __slots__ = ("epoch", "node", "partitions")

    def __init__(self, node: int) -> None:
        self.node = node
        self.epoch = INITIAL_EPOCH
        #: partitions the broker has in this session (as of the last request built)
        self.partitions: dict[TopicPartition, uuid.UUID] = {}

    @property
    def is_new(self) -> bool:
        """The next request opens the session (no acknowledgement may ride on it)."""
        return self.epoch == INITIAL_EPOCH

    def build_fetch(self, wanted: dict[TopicPartition, uuid.UUID]) -> FetchPlan:
        """The epoch and partition changes of the next ShareFetch that fetches ``wanted``."""
        if self.is_new:
            self.partitions = dict(wanted)
            return FetchPlan(INITIAL_EPOCH, list(wanted.items()), [])
        added: list[tuple[TopicPartition, uuid.UUID]] = []
        forgotten: list[tuple[TopicPartition, uuid.UUID]] = []
        for tp, tid in list(self.partitions.items()):
            new_id = wanted.get(tp)
            if new_id is None:
                forgotten.append((tp, tid))
                del self.partitions[tp]
            elif new_id != tid:  # the topic was deleted and created again
                forgotten.append((tp, tid))
                added.append((tp, new_id))
                self.partitions[tp] = new_id
        for tp, tid in wanted.items():
            if tp not in self.partitions:
                added.append((tp, tid))
                self.partitions[tp] = tid
        return FetchPlan(self.epoch, added, forgotten)

    def on_response(self, error_code: int) -> bool:
        """A ShareFetch / ShareAcknowledge answer arrived; False if the session is gone."""
        if error_code in SESSION_ERRORS:
            self.reset()
            return False
        self.epoch = next_epoch(self.epoch)
        return error_code == 0

    def reset(self) -> None:
        """Start over with epoch 0 (after a session error or a failed connection)."""
        self.epoch = INITIAL_EPOCH
        self.partitions = {}

    def close_epoch(self) -> int:
        """The epoch of the request that closes the session; afterwards the session is new."""
        self.epoch = FINAL_EPOCH
        return FINAL_EPOCH
