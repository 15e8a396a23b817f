"""ShareFetcher's request logic with a scripted network client (no broker): session
epochs, piggy-backed acknowledgements, the epoch-0 rule, retries, epoch -1 on close."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import deque
from typing import Any

from kafkalite.errors import InvalidRecordStateError, ShareSessionNotFoundError
from kafkalite.metrics import Metrics
from kafkalite.protocol.messages.share_acknowledge import (
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareAcknowledgeResponsePartitionData,
    ShareAcknowledgeResponseShareAcknowledgeTopicResponse,
)
from kafkalite.protocol.messages.share_fetch import (
    ShareFetchRequest,
    ShareFetchResponse,
    ShareFetchResponseAcquiredRecords,
    ShareFetchResponsePartitionData,
    ShareFetchResponseShareFetchableTopicResponse,
)
from kafkalite.protocol.record_builder import RecordBatchBuilder
from kafkalite.share.acks import Acknowledgements
from kafkalite.share.fetcher import ShareFetcher
from kafkalite.share.metrics import ShareConsumerMetrics
from kafkalite.share.types import AcknowledgeType
from kafkalite.types import TopicPartition
from tests.helpers.settings import resolve

TID = uuid.uuid4()
TP = TopicPartition("jobs", 0)
NODE = 1


class FakeMeta:
    def leader_for(self, topic: str, partition: int) -> int:
        return NODE

    def topic_id(self, topic: str) -> uuid.UUID:
        return TID

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return "jobs" if topic_id == TID else None


class FakeConn:
    def __init__(self, client: FakeClient) -> None:
        self.client = client

    def api_version(self, cls: Any) -> int:
        return cls.MAX_VERSION

    async def request(self, request: Any, **kw: Any) -> Any:
        return await self.client.send(NODE, request)


class FakeClient:
    """Answers each request with the next scripted response; records what was sent."""

    def __init__(self) -> None:
        self.metadata = FakeMeta()
        self.sent: list[Any] = []
        self.answers: deque[Any] = deque()

    async def connection(self, node: int, channel: str = "default") -> FakeConn:
        return FakeConn(self)

    async def send(self, node: int, request: Any, **kw: Any) -> Any:
        self.sent.append(request)
        answer = self.answers.popleft()
        if isinstance(answer, BaseException):
            raise answer
        return answer


class FakeMember:
    member_id = "m-1"
    active = True
    assignment = frozenset({TP})


class FakeCore:
    def __init__(self) -> None:
        self.cfg = resolve("share_consumer", {"bootstrap.servers": "h:1", "group.id": "g"})
        self.client = FakeClient()
        self.loop = asyncio.get_running_loop()
        self.group_id = "g"
        self.member = FakeMember()
        self.buffer: deque[Any] = deque()
        self.metrics = ShareConsumerMetrics(Metrics())
        self.api_timeout_s = 5.0
        self.acks: list[Any] = []
        self.errors: list[BaseException] = []

    def notify_poll(self) -> None:
        pass

    def request_metadata(self) -> None:
        pass

    def report_error(self, exc: BaseException) -> None:
        self.errors.append(exc)

    def report_acks(self, outcomes: list[Any]) -> None:
        self.acks.extend(outcomes)



def fetch_answer(first: int = 0, last: int = -1, code: int = 0, ack_code: int = 0) -> ShareFetchResponse:
    data = b""
    acquired = []
    if last >= first:
        b = RecordBatchBuilder(base_offset=first, batch_size=1 << 20)
        for o in range(first, last + 1):
            b.append(0, None, b"v%d" % o, None)
        data = b.build()
        acquired = [ShareFetchResponseAcquiredRecords(first_offset=first, last_offset=last, delivery_count=1)]
    return ShareFetchResponse(error_code=code, acquisition_lock_timeout_ms=30000, responses=[
        ShareFetchResponseShareFetchableTopicResponse(topic_id=TID, partitions=[ShareFetchResponsePartitionData(
            partition_index=0, records=data, acquired_records=acquired, acknowledge_error_code=ack_code)])])


def ack_answer(code: int = 0, partition_code: int = 0) -> ShareAcknowledgeResponse:
    return ShareAcknowledgeResponse(error_code=code, responses=[
        ShareAcknowledgeResponseShareAcknowledgeTopicResponse(topic_id=TID, partitions=[
            ShareAcknowledgeResponsePartitionData(partition_index=0, error_code=partition_code)])])


def acks(*offsets: int, kind: AcknowledgeType = AcknowledgeType.ACCEPT) -> dict[int, dict[TopicPartition, Acknowledgements]]:
    a = Acknowledgements()
    for o in offsets:
        a.add(o, kind)
    return {NODE: {TP: a}}


async def fetch_once(fetcher: ShareFetcher, with_acks: Any = None) -> None:
    fetcher.request_fetch(with_acks or {})
    fetcher._start_fetches()
    while fetcher._tasks:
        await asyncio.gather(*list(fetcher._tasks), return_exceptions=True)


async def scenario() -> None:
    core = FakeCore()
    fetcher = ShareFetcher(core.cfg, core.group_id, core.client, core.loop, core.member, core.buffer, core.metrics,
                           reports=core, task_done=lambda task: None)
    client = core.client
    # 1. A new session: epoch 0, the partition listed, no acknowledgements allowed.
    client.answers.append(fetch_answer(0, 2))
    await fetch_once(fetcher, acks(99))
    first = client.sent[-1]
    assert isinstance(first, ShareFetchRequest) and first.share_session_epoch == 0
    assert first.member_id == "m-1" and first.group_id == "g" and first.max_records == 500
    assert [p.acknowledgement_batches for t in first.topics for p in t.partitions] == [[]]
    (lost,) = core.acks
    assert isinstance(lost.error, ShareSessionNotFoundError) and lost.offsets == {99}
    assert len(core.buffer) == 1 and core.buffer[0].acquired_count == 3
    assert fetcher.fetch_more is False and fetcher.acquisition_lock_timeout_ms == 30000
    # 2. The next fetch carries the acknowledgements (epoch 1, no partition changes).
    client.answers.append(fetch_answer())
    await fetch_once(fetcher, acks(0, 1, 2))
    second = client.sent[-1]
    assert second.share_session_epoch == 1
    (topic,) = second.topics
    (part,) = topic.partitions
    assert [(b.first_offset, b.last_offset, b.acknowledge_types) for b in part.acknowledgement_batches] == [(0, 2, [1])]
    assert core.acks[-1].error is None and core.acks[-1].offsets == {0, 1, 2}
    assert fetcher.fetch_more is True  # nothing acquired: keep fetching
    # 3. commit: ShareAcknowledge with epoch 2; a retriable partition error is retried.
    client.answers.extend([ack_answer(partition_code=6), ack_answer()])
    outcomes = await fetcher.acknowledge(acks(3, kind=AcknowledgeType.RELEASE), time.monotonic() + 5)
    a1, a2 = client.sent[-2:]
    assert isinstance(a1, ShareAcknowledgeRequest) and (a1.share_session_epoch, a2.share_session_epoch) == (2, 3)
    assert a2.topics[0].partitions[0].acknowledgement_batches[0].acknowledge_types == [2]
    assert [o.error for o in outcomes] == [None]
    # 4. A non-retriable partition error is the outcome at once.
    client.answers.append(ack_answer(partition_code=121))
    (bad,) = await fetcher.acknowledge(acks(4), time.monotonic() + 5)
    assert isinstance(bad.error, InvalidRecordStateError) and bad.partition == TP
    # 5. A session error resets the session: the next fetch opens a new one (epoch 0).
    client.answers.append(fetch_answer(code=122))
    await fetch_once(fetcher)
    assert fetcher.sessions[NODE].is_new
    fetcher._not_before.clear()
    client.answers.append(fetch_answer(5, 5))
    await fetch_once(fetcher)
    assert client.sent[-1].share_session_epoch == 0
    # 6. close: epoch -1 even with nothing to acknowledge, and the session is gone.
    client.answers.append(ack_answer())
    await fetcher.acknowledge({}, time.monotonic() + 5, closing=True)
    assert client.sent[-1].share_session_epoch == -1 and client.sent[-1].topics == []
    assert NODE not in fetcher.sessions


def test_share_fetcher_requests() -> None:
    asyncio.run(scenario())
