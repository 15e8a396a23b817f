"""clients_common: what the consumer and the share consumer share, without a broker:
heartbeat answers read from real (decoded) responses of both kinds, the engine tasks'
death reporting and the loops' wait."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any

import pytest

from kafkalite.clients_common.membership import HeartbeatAnswer
from kafkalite.clients_common.tasks import BackgroundTasks, wait_for_wake
from kafkalite.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatResponseAssignment,
    ConsumerGroupHeartbeatResponseTopicPartitions,
)
from kafkalite.protocol.messages.share_group_heartbeat import (
    ShareGroupHeartbeatResponse,
    ShareGroupHeartbeatResponseAssignment,
    ShareGroupHeartbeatResponseTopicPartitions,
)

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


@pytest.mark.parametrize(("response_cls", "assignment_cls", "partitions_cls", "version"), [
    (ConsumerGroupHeartbeatResponse, ConsumerGroupHeartbeatResponseAssignment,
     ConsumerGroupHeartbeatResponseTopicPartitions, 0),
    (ShareGroupHeartbeatResponse, ShareGroupHeartbeatResponseAssignment,
     ShareGroupHeartbeatResponseTopicPartitions, 1),
])
def test_a_heartbeat_answer_reads_both_response_kinds(response_cls: Any, assignment_cls: Any,
                                                      partitions_cls: Any, version: int) -> None:
    sent = response_cls(error_code=0, member_id="m-1", member_epoch=7, heartbeat_interval_ms=2500,
                        assignment=assignment_cls(topic_partitions=[partitions_cls(topic_id=T2, partitions=[3, 1]),
                                                                    partitions_cls(topic_id=T1, partitions=[0])]))
    received = response_cls.decode(sent.encode(version), version)
    assert HeartbeatAnswer.of(received) == HeartbeatAnswer(0, "m-1", 7, 2500, {T2: [1, 3], T1: [0]})
    failed = response_cls(error_code=25, member_id=None, assignment=sent.assignment)
    assert HeartbeatAnswer.of(failed) == HeartbeatAnswer(25, None, 0, 0, None)  # no assignment from an error


async def test_a_task_that_dies_is_reported_once_and_not_while_closing(caplog: pytest.LogCaptureFixture) -> None:
    deaths: list[BaseException] = []
    closing = False
    tasks = BackgroundTasks(asyncio.get_running_loop(), "kafkalite-test", "test client", logging.getLogger("t"),
                            on_death=deaths.append, is_closed=lambda: closing)

    async def dies(what: str) -> None:
        raise OSError(what)

    first = tasks.spawn(dies("disk gone"), "writer")
    await asyncio.gather(first, return_exceptions=True)
    await asyncio.sleep(0)  # done callbacks run on the next loop turn
    assert first.get_name() == "kafkalite-test-writer" and tasks.tasks == [first]
    assert [str(e) for e in deaths] == ["disk gone"]
    assert "test client task kafkalite-test-writer died" in caplog.text
    closing = True
    second = tasks.spawn(dies("closing"), "reader")
    await asyncio.gather(second, return_exceptions=True)
    await asyncio.sleep(0)
    assert [str(e) for e in deaths] == ["disk gone"]


async def test_wait_for_wake_returns_when_woken_or_at_its_timeout() -> None:
    wake = asyncio.Event()
    started = time.monotonic()
    await wait_for_wake(wake, 0.05)
    assert time.monotonic() - started >= 0.04  # the timeout passed, nothing raised
    asyncio.get_running_loop().call_later(0.01, wake.set)
    waiting = asyncio.ensure_future(wait_for_wake(wake, None))  # None: no limit
    await asyncio.wait_for(waiting, 30)  # generous: a busy machine
    assert wake.is_set()
