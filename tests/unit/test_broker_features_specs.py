"""The feature table (kafkalite.net.features) checked against the releases themselves: for
every release the test suite runs (the default, 3.9.1 and the oldest), a feature's API is
in that release's kafka-clients message specs at the version needed exactly when the table
says the release has the feature. The jars come from the harness's checksummed cache
(scripts/test.sh fetches them before the tests)."""

from __future__ import annotations

import re
import zipfile

import pytest

from kafkalite.net.features import (
    CONSUMER_GROUP_DESCRIBE,
    FEATURES,
    KIP848_GROUPS,
    BrokerFeature,
    api_name,
)
from kafkalite.testing.distribution import (
    COMPAT_KAFKA_VERSION,
    DEFAULT_KAFKA_VERSION,
    KafkaDistribution,
)
from kafkalite.testing.releases import OLDEST_KAFKA_VERSION, release_of

#: Features whose API is in a release's specs before the table's "since": it came as a
#: preview (ConsumerGroupHeartbeat is in 3.6's specs as unstable; 3.7-3.9 serve it off by
#: default and answer UNSUPPORTED_VERSION), so the table names the first release where
#: it works as shipped.
PREVIEWS = {KIP848_GROUPS.name: "3.6", CONSUMER_GROUP_DESCRIBE.name: "3.7"}


def _spec_max_version(jar: zipfile.ZipFile, name: str) -> int | None:
    try:
        text = jar.read(f"common/message/{name}Request.json").decode()
    except KeyError:
        return None
    found = re.search(r'"validVersions"\s*:\s*"([^"]+)"', text)  # the specs are JSON with comments
    assert found is not None, name
    return int(found.group(1).split("-")[-1])


@pytest.mark.parametrize("version", sorted({DEFAULT_KAFKA_VERSION, COMPAT_KAFKA_VERSION, OLDEST_KAFKA_VERSION}))
def test_the_table_agrees_with_each_releases_own_specs(version: str) -> None:
    dist = KafkaDistribution(version).ensure()
    clients = next(p for p in dist.classpath() if p.name == f"kafka-clients-{version}.jar")
    with zipfile.ZipFile(clients) as jar:
        for feature in FEATURES:
            if feature.api is None or feature.feature_flag is not None:
                continue  # a finalized level, not the API alone, decides (ELR, transactions v2)
            top = _spec_max_version(jar, api_name(feature.api))
            served = top is not None and top >= feature.min_version
            since = PREVIEWS.get(feature.name, feature.since)
            assert served == (release_of(version) >= release_of(since)), (feature.name, version, top)


def test_every_api_feature_is_checked_above() -> None:
    checked: list[BrokerFeature] = [f for f in FEATURES if f.api is not None and f.feature_flag is None]
    assert len(checked) == len(FEATURES) - 2  # only the feature-level ones (TV2, ELR) are not
