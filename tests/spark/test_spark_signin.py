"""format("kafkalite") signed in with OIDC (OAUTHBEARER, KIP-768) through ``kafka.*``
options: every Spark task's client fetches its token from the provider itself."""

from __future__ import annotations

from typing import Any

import pytest

from kafkalite import Consumer, TopicPartition

pytestmark = [pytest.mark.broker, pytest.mark.timeout(300)]


def oidc_options(listener: Any, provider: Any) -> dict[str, str]:
    settings = provider.client_settings("spark-app", "spark-secret")
    options = {f"kafka.{k}": str(v) for k, v in settings.items()}
    options.update({"kafka.bootstrap.servers": listener.bootstrap, "kafka.security.protocol": "SASL_PLAINTEXT"})
    return options


def test_write_then_read_with_oidc(spark: Any, kafka_broker_oauth: Any, oidc_provider: Any) -> None:
    from pyspark.sql.types import BinaryType, StringType, StructField, StructType

    topic = kafka_broker_oauth.create_topic("spark-oidc", 2)
    options = oidc_options(kafka_broker_oauth, oidc_provider)
    schema = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    rows = [(f"k{i}", f"v{i}".encode()) for i in range(50)]
    (spark.createDataFrame(rows, schema).repartition(2).write.format("kafkalite")
     .options(**options).option("topic", topic).mode("append").save())

    # Written through the OIDC listener: read back with a plain consumer on the back door.
    with Consumer({"bootstrap.servers": kafka_broker_oauth.broker.bootstrap}) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(2)])
        consumer.seek_to_beginning()
        got: list[Any] = []
        for _ in range(60):
            got += consumer.poll(0.5)
            if len(got) >= 50:
                break
    assert sorted(r.value for r in got) == sorted(v for _, v in rows)

    df = spark.read.format("kafkalite").options(**options).option("subscribe", topic).load()
    read = sorted((r.key.decode(), r.value) for r in df.select("key", "value").collect())
    assert read == sorted(rows)
