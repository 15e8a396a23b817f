"""ApiVersionTable: negotiation, and an ApiVersions answer damaged on the way.

An answer whose bytes were flipped can still decode (the network-fault proxy of
kafkalite.testing does it): an API every Kafka broker serves then seems missing or has
an empty range. That is a ProtocolError (the connection closes and the next one asks
again, see test_broker_connection.py), not UnsupportedVersionForClientError, which is
kept for brokers that really are too old or lack an optional API."""

from __future__ import annotations

import pytest

from kafkalite.errors import ProtocolError, UnsupportedVersionForClientError
from kafkalite.net.versions import ApiVersionTable
from kafkalite.protocol.messages.api_versions import (
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
)
from kafkalite.protocol.messages.describe_cluster import DescribeClusterRequest
from kafkalite.protocol.messages.fetch import FetchRequest
from kafkalite.protocol.messages.metadata import MetadataRequest

BROKER = {0: (3, 12), 1: (4, 18), 2: (1, 10), 3: (0, 13), 18: (0, 4), 60: (0, 2)}  # key: (min, max)


def table(**changes: tuple[int, int] | None) -> ApiVersionTable:
    ranges = dict(BROKER)
    names = {"produce": 0, "fetch": 1, "list_offsets": 2, "metadata": 3, "describe_cluster": 60}
    for name, value in changes.items():
        if value is None:
            del ranges[names[name]]
        else:
            ranges[names[name]] = value
    return ApiVersionTable.from_response(ApiVersionsResponse(api_keys=[
        ApiVersionsResponseApiVersion(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in ranges.items()]))


def test_the_highest_version_both_speak() -> None:
    assert table().version_for(MetadataRequest) == 13
    assert table(metadata=(0, 7)).version_for(MetadataRequest) == 7


def test_an_answer_without_an_api_every_broker_serves_was_damaged() -> None:
    with pytest.raises(ProtocolError, match="lists no Metadata, an API every Kafka broker serves"):
        table(metadata=None).version_for(MetadataRequest)
    with pytest.raises(ProtocolError, match="lists no Fetch"):
        table(fetch=None).version_for(FetchRequest)


def test_an_empty_range_for_an_api_every_broker_serves_was_damaged() -> None:
    with pytest.raises(ProtocolError, match="gives Fetch the empty range 260-18"):
        table(fetch=(260, 18)).version_for(FetchRequest)


def test_a_broker_too_old_or_without_an_optional_api_is_unsupported() -> None:
    with pytest.raises(UnsupportedVersionForClientError, match="supports Fetch versions 0-3"):
        table(fetch=(0, 3)).version_for(FetchRequest)  # a broker before KIP-74 / 0.11
    with pytest.raises(UnsupportedVersionForClientError, match="DescribeCluster versions none"):
        table(describe_cluster=None).version_for(DescribeClusterRequest)
    assert not table(describe_cluster=None).supports(DescribeClusterRequest)
