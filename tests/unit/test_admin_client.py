"""The blocking admin client's timeouts, Ctrl-C and closing, without a broker
(127.0.0.1:1 refuses every connection)."""

from __future__ import annotations

import time

import pytest

from kafkalite import AdminClient, NewTopic
from kafkalite.errors import ClientClosedError, ConfigError, KafkaTimeoutError
from tests.helpers.interrupts import interrupt_main_when, main_thread_waits_in


def nowhere() -> AdminClient:
    return AdminClient({"bootstrap.servers": "127.0.0.1:1", "reconnect.backoff.max.ms": 100})


def test_single_answer_calls_honour_their_timeout() -> None:
    with nowhere() as admin:
        start = time.monotonic()
        with pytest.raises(KafkaTimeoutError):
            admin.list_topics(timeout=1.0)
        assert time.monotonic() - start < 10  # its 1 s, not default.api.timeout.ms (60 s); generous


def test_item_calls_report_the_timeout_per_item() -> None:
    with nowhere() as admin:
        result = admin.create_topics([NewTopic("a", 1, 1), NewTopic("b", 1, 1)], timeout=1.0)
        assert set(result.errors) == {"a", "b"}
        assert all(isinstance(e, KafkaTimeoutError) and "create_topics" in str(e) for e in result.errors.values())
        assert result.errors["a"].topic == "a"


def test_ctrl_c_interrupts_a_call_promptly_and_the_client_closes() -> None:
    admin = nowhere()
    interrupt_main_when(main_thread_waits_in("describe_cluster"))
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        admin.describe_cluster(timeout=30)
    assert time.monotonic() - start < 10  # at once (a wait slice is 0.1 s), not after 30 s
    start = time.monotonic()
    admin.close()
    assert time.monotonic() - start < 10  # close never hangs (generous for a busy machine)
    with pytest.raises(ClientClosedError):
        admin.list_topics()


def test_bad_settings_and_arguments_fail_at_once() -> None:
    with pytest.raises(ConfigError, match="did you mean 'retry.backoff.ms'"):
        AdminClient({"bootstrap.servers": "127.0.0.1:1", "retry.backof.ms": 5})
    with nowhere() as admin, pytest.raises(ConfigError, match="listed twice"):
        admin.create_topics([NewTopic("a"), NewTopic("a")])
