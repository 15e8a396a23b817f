"""DirectAnswer: settled once, its callback called in the same call, errors kept from the caller."""

from __future__ import annotations

import asyncio
import logging

import pytest

from kafkalite.net.answers import DirectAnswer


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
