"""format("kafkalite") looks for Spark's Python Data Source API, never at the version
string: Spark builds that carry the API under a 3.5 version number (vendor backports)
run it. Here PySpark 4 reports itself as 3.5.1 to everything in this process."""

from __future__ import annotations

from typing import Any

import pytest

from kafkalite import Producer

pytestmark = [pytest.mark.broker, pytest.mark.timeout(300)]

REPORTED = "3.5.1"


def test_the_data_source_runs_on_a_spark_that_reports_version_3_5(spark: Any, kafka_broker: Any,
                                                                   topic_factory: Any,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import pyspark
    import pyspark.version
    from pyspark.sql import SparkSession
    from pyspark_kafkalite import has_datasource_api, read_kafka_stream
    from pyspark_kafkalite.frames import register_source

    monkeypatch.setattr(pyspark, "__version__", REPORTED)
    monkeypatch.setattr(pyspark.version, "__version__", REPORTED)
    monkeypatch.setattr(SparkSession, "version", property(lambda self: REPORTED))
    assert (spark.version, pyspark.__version__) == (REPORTED, REPORTED)

    topic = topic_factory(partitions=2)
    with Producer({"bootstrap.servers": kafka_broker.bootstrap}) as producer:
        for i in range(20):
            producer.send(topic, f"v{i}".encode(), partition=i % 2)
        producer.flush()
    options = {"kafka.bootstrap.servers": kafka_broker.bootstrap, "subscribe": topic}
    assert has_datasource_api()
    df = spark.read.format(register_source(spark)).options(**options).load()
    assert sorted(r.value.decode() for r in df.select("value").collect()) == sorted(f"v{i}" for i in range(20))
    stream = read_kafka_stream(spark, options)
    assert stream.isStreaming
    assert stream.schema == df.schema
