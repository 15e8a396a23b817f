"""DirectAnswer: settled once, its callback called in the same call, errors kept from the caller;
and BrokerConnection.send_direct settling one on a response, a timeout and a lost connection
(a scripted broker: a real one cannot be made to never answer).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from kafkalite.errors import KafkaConnectionError, KafkaTimeoutError
from kafkalite.net.answers import DirectAnswer
from kafkalite.net.client import NetworkClient
from kafkalite.protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
)
from tests.helpers.fake_broker import FakeBroker
from tests.helpers.settings import resolve


def test_the_callback_runs_when_the_answer_is_set_and_sees_the_result() -> None:
    seen: list[object] = []
    answer: DirectAnswer[str] = DirectAnswer(lambda a: seen.append(a.result()))
    assert not answer.done()
    with pytest.raises(asyncio.InvalidStateError):
        answer.exception()
    answer.set_result("fetched")
    assert seen == ["fetched"]
    assert answer.done() and answer.exception() is None and not answer.cancelled()
    with pytest.raises(asyncio.InvalidStateError, match="already settled"):
        answer.set_result("again")
    assert seen == ["fetched"]


def test_an_error_is_the_answer_and_result_raises_it() -> None:
    seen: list[BaseException | None] = []
    answer: DirectAnswer[str] = DirectAnswer(lambda a: seen.append(a.exception()))
    error = ConnectionError("node 1 went away")
    answer.set_exception(error)
    assert seen == [error]
    with pytest.raises(ConnectionError, match="node 1 went away"):
        answer.result()


def test_cancel_settles_at_once_and_only_once() -> None:
    calls: list[bool] = []
    answer: DirectAnswer[str] = DirectAnswer(lambda a: calls.append(a.cancelled()))
    assert answer.cancel() is True
    assert calls == [True]
    assert answer.cancel() is False
    assert calls == [True]
    with pytest.raises(asyncio.CancelledError):
        answer.result()


def test_a_failing_callback_is_logged_not_raised_into_the_connection(caplog: pytest.LogCaptureFixture) -> None:
    def broken(answer: DirectAnswer[str]) -> None:
        raise ValueError("handler bug")

    answer: DirectAnswer[str] = DirectAnswer(broken)
    with caplog.at_level(logging.ERROR, logger="kafkalite.net"):
        answer.set_result("x")
    assert answer.done()
    assert any("callback of a request's answer failed" in r.getMessage() and r.exc_info for r in caplog.records)


# ---------------------------------------------------------------- through a connection

def _metadata(broker: FakeBroker) -> Any:
    def answer(request: Any, version: int) -> MetadataResponse:
        return MetadataResponse(brokers=[MetadataResponseBroker(node_id=1, host="127.0.0.1", port=broker.port)],
                                cluster_id="fake", controller_id=1, topics=[])
    return answer


def _direct(conn: Any, timeout_ms: float | None = None) -> asyncio.Future[DirectAnswer[Any]]:
    """send_direct a MetadataRequest; the future gets the settled answer from its callback."""
    settled: asyncio.Future[DirectAnswer[Any]] = asyncio.get_running_loop().create_future()
    conn.send_direct(MetadataRequest(topics=[]), settled.set_result, timeout_ms=timeout_ms)
    return settled


def test_send_direct_hands_over_the_response_a_timeout_and_a_lost_connection() -> None:
    async def main() -> None:
        hang = asyncio.Event()

        async def metadata_or_hang(request: Any, version: int) -> MetadataResponse:
            if hang.is_set():
                await asyncio.sleep(3600)  # never answers: the request times out
            return _metadata(broker)(request, version)

        async with FakeBroker({3: metadata_or_hang}) as broker:
            client = NetworkClient(resolve("consumer", {"bootstrap.servers": broker.bootstrap}))
            try:
                await client.bootstrap(timeout_s=10)
                conn = await client.connection(1)
                answer = await asyncio.wait_for(_direct(conn), 10)
                assert answer.result().brokers[0].node_id == 1

                hang.set()
                answer = await asyncio.wait_for(_direct(conn, timeout_ms=300), 10)
                with pytest.raises(KafkaTimeoutError, match=r"Metadata request to node 1 .* timed out after 300 ms"):
                    answer.result()

                conn = await client.connection(1)  # the timeout closed the last one
                waiting = _direct(conn)
                conn.close()
                answer = await asyncio.wait_for(waiting, 10)
                assert isinstance(answer.exception(), KafkaConnectionError)
                # A closed connection cannot take one: settled before send_direct returns.
                late = conn.send_direct(MetadataRequest(topics=[]), lambda a: None)
                assert late.done() and isinstance(late.exception(), KafkaConnectionError)
            finally:
                await client.close()

    asyncio.run(main())
