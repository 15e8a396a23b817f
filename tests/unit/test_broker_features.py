"""The broker-feature table (kafkalite.net.features): what each feature needs, and the one
error a broker without it gets (no broker: ApiVersions tables made by hand)."""

from __future__ import annotations

import pytest

from kafkalite.errors import UnsupportedFeatureError, UnsupportedVersionForClientError
from kafkalite.net.features import (
    CONSUMER_GROUP_DESCRIBE,
    FEATURES,
    INCREMENTAL_ALTER_CONFIGS,
    KIP848_GROUPS,
    STATIC_MEMBERSHIP,
    TRANSACTIONS_V2,
    missing_features,
    require,
)
from kafkalite.net.versions import ApiVersionTable, VersionRange
from kafkalite.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from kafkalite.protocol.messages.join_group import JoinGroupRequest


def table(ranges: dict[int, tuple[int, int]], features: dict[str, int] | None = None) -> ApiVersionTable:
    return ApiVersionTable({k: VersionRange(*v) for k, v in ranges.items()}, features)


def test_a_broker_without_consumer_group_heartbeat_gets_an_error_naming_all_of_it() -> None:
    with pytest.raises(UnsupportedFeatureError) as caught:
        require(table({0: (0, 7)}), KIP848_GROUPS, broker="127.0.0.1:9092 (node 1)", group_id="g")
    err = caught.value
    assert isinstance(err, UnsupportedVersionForClientError)  # what callers already catch
    text = str(err)
    assert "group.protocol=consumer (KIP-848) needs Apache Kafka 4.0 or later" in text
    assert "127.0.0.1:9092 (node 1)" in text and "does not serve ConsumerGroupHeartbeat" in text
    assert "group.protocol=classic" in text
    assert (err.feature, err.minimum_release, err.group_id) == ("group.protocol=consumer", "4.0", "g")


def test_a_broker_with_the_api_passes() -> None:
    key = ConsumerGroupHeartbeatRequest.API_KEY
    require(table({key: (0, 1)}), KIP848_GROUPS)


def test_an_api_below_the_version_needed_is_named_with_its_range() -> None:
    key = JoinGroupRequest.API_KEY
    with pytest.raises(UnsupportedFeatureError, match=r"serves JoinGroup v0-3, and this needs v5\+"):
        require(table({key: (0, 3)}), STATIC_MEMBERSHIP)
    require(table({key: (0, 9)}), STATIC_MEMBERSHIP)


def test_a_feature_level_below_the_one_needed_is_named() -> None:
    with pytest.raises(UnsupportedFeatureError, match="its finalized transaction.version is 1, and this needs 2"):
        require(table({}, {"transaction.version": 1}), TRANSACTIONS_V2)
    require(table({}, {"transaction.version": 2}), TRANSACTIONS_V2)


def test_missing_features_lists_what_an_old_broker_lacks() -> None:
    lacking = {f for f, _ in missing_features(table({}))}
    assert {KIP848_GROUPS, INCREMENTAL_ALTER_CONFIGS, CONSUMER_GROUP_DESCRIBE} <= lacking
    assert lacking == set(FEATURES)


def test_every_feature_names_a_kip_and_a_release() -> None:
    for feature in FEATURES:
        assert feature.kip.startswith("KIP-") and feature.needs
        major, minor = (int(x) for x in feature.since.split("."))
        assert (2, 1) < (major, minor) <= (4, 4), feature
