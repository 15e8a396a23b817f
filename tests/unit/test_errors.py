"""The error registry: one class per Kafka error code, grouped like the Java tree."""

from __future__ import annotations

import csv
import pickle
from pathlib import Path

import pytest

from kafkalite import errors

TSV = Path(__file__).resolve().parents[2] / "tools" / "kafka-protocol" / "errors.tsv"
ROWS = [r for r in csv.DictReader(TSV.open(), delimiter="\t") if r["code"] != "0"]


def test_every_code_has_its_own_class() -> None:
    assert len(ROWS) == 137  # the 138 codes of Kafka 4.4.0 minus NONE
    classes = {errors.ERRORS_BY_CODE[int(r["code"])] for r in ROWS}
    assert len(classes) == len(ROWS)
    for row in ROWS:
        exc = errors.error_for_code(int(row["code"]), "boom")
        assert exc.code == int(row["code"]) and exc.name == row["name"]
        # Kafka's table, except where kafkalite says why it differs (tools/gen_errors.py).
        expected = RETRIABLE_OVERRIDES.get(row["name"], row["retriable"] == "true")
        assert exc.retriable is expected, row["name"]
        assert isinstance(exc, errors.ApiError) and isinstance(exc, errors.KafkaError)


#: REBALANCE_IN_PROGRESS from commit(): poll(), then commit again (docs/consumer.md).
RETRIABLE_OVERRIDES = {"REBALANCE_IN_PROGRESS": True}


def test_a_rebalance_in_progress_is_retriable_and_a_failed_commit_is_not() -> None:
    assert errors.RebalanceInProgressError("x").retriable
    assert not errors.CommitFailedError("x").retriable


@pytest.mark.parametrize(
    "code,parent",
    [
        (6, errors.InvalidMetadataError),          # NOT_LEADER_OR_FOLLOWER: refresh and retry
        (3, errors.InvalidMetadataError),          # UNKNOWN_TOPIC_OR_PARTITION
        (16, errors.RefreshRetriableError),        # NOT_COORDINATOR
        (29, errors.AuthorizationError),           # TOPIC_AUTHORIZATION_FAILED
        (58, errors.AuthenticationError),          # SASL_AUTHENTICATION_FAILED
        (1, errors.InvalidOffsetError),            # OFFSET_OUT_OF_RANGE
        (90, errors.ApplicationRecoverableError),  # PRODUCER_FENCED
        (59, errors.OutOfOrderSequenceError),      # UNKNOWN_PRODUCER_ID
    ],
)
def test_grouping_follows_java(code: int, parent: type) -> None:
    assert isinstance(errors.error_for_code(code), parent)


def test_unknown_code_keeps_its_number() -> None:
    exc = errors.error_for_code(4242, "from the future")
    assert isinstance(exc, errors.UnknownApiError)
    assert exc.code == 4242 and "4242" in str(exc)
    again = pickle.loads(pickle.dumps(exc))
    assert again.code == 4242 and str(again) == str(exc)


def test_message_names_the_resource() -> None:
    exc = errors.error_for_code(10, "batch too big", topic="orders", partition=3)
    assert str(exc) == "[MESSAGE_TOO_LARGE (10)] batch too big (topic 'orders' partition 3)"
    assert errors.error_for_code(90, transactional_id="tx-1").fatal
    assert errors.error_for_code(120).abortable


def test_raise_for_code() -> None:
    errors.raise_for_code(0)
    with pytest.raises(errors.NotCoordinatorError):
        errors.raise_for_code(16, group_id="g")


def test_client_side_errors_are_kafka_errors() -> None:
    assert issubclass(errors.ConfigError, ValueError)
    assert issubclass(errors.KafkaTimeoutError, TimeoutError)
    assert issubclass(errors.KafkaConnectionError, errors.InvalidMetadataError)
    assert errors.KafkaTimeoutError("t").retriable
