"""kafkalite's PySpark connector: ``format("kafkalite")``, Spark's Kafka connector
without the jar, and DataFrame functions that do the same on every Spark release.

PySpark (>= 4.0, or any build with Spark's Python Data Source API) registers installed
top-level modules named ``pyspark_*`` that have a ``DefaultSource`` by itself, so after
``pip install kafkalite[spark]`` this works with no registration call::

    df = (spark.read.format("kafkalite")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "orders")
          .load())

``spark.dataSource.register(KafkaLiteDataSource)`` registers it explicitly (e.g. in a
session started before the package was installed). On every release, Spark 3.5
included, :func:`read_kafka`, :func:`write_kafka` and :func:`read_kafka_incremental`
read and write with the same options and rows::

    from pyspark_kafkalite import read_kafka
    df = read_kafka(spark, {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "orders"})

See ``docs/spark.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark_kafkalite.capabilities import has_datasource_api
    from pyspark_kafkalite.frames import read_kafka, read_kafka_stream, write_kafka
    from pyspark_kafkalite.incremental import read_kafka_incremental
    from pyspark_kafkalite.source import KafkaLiteDataSource

    #: What PySpark's data source lookup registers (under ``KafkaLiteDataSource.name()``).
    DefaultSource = KafkaLiteDataSource

__all__ = ["DefaultSource", "KafkaLiteDataSource", "has_datasource_api", "read_kafka", "read_kafka_incremental",
           "read_kafka_stream", "write_kafka"]

#: The public functions, by the module that defines them (imported on first access).
_FUNCTIONS = {
    "read_kafka": "pyspark_kafkalite.frames",
    "write_kafka": "pyspark_kafkalite.frames",
    "read_kafka_stream": "pyspark_kafkalite.frames",
    "read_kafka_incremental": "pyspark_kafkalite.incremental",
    "has_datasource_api": "pyspark_kafkalite.capabilities",
}


def __getattr__(name: str) -> Any:
    # Lazy (PEP 562): a write task's Python worker unpickles the writer, which imports
    # this package; importing the planner, the reader and the admin client there as
    # well cost ~1.5 s of CPU per worker. The driver's lookup of DefaultSource imports
    # the data source on first access.
    if name in ("DefaultSource", "KafkaLiteDataSource"):
        from pyspark_kafkalite.capabilities import has_datasource_api, pyspark_version

        if not has_datasource_api():
            raise ImportError(
                f"pyspark_kafkalite.{name} (format(\"kafkalite\")) needs Spark's Python Data Source API, which "
                f"PySpark {pyspark_version()} lacks (open-source Spark has it from 4.0 on); on this Spark use "
                "pyspark_kafkalite.read_kafka / write_kafka / read_kafka_incremental", name=name)
        from pyspark_kafkalite.source import KafkaLiteDataSource

        return KafkaLiteDataSource
    if name in _FUNCTIONS:
        import importlib

        return getattr(importlib.import_module(_FUNCTIONS[name]), name)
    # PEP 562: hasattr() and `from ... import` expect AttributeError here.
    raise AttributeError(f"module 'pyspark_kafkalite' has no attribute {name!r}")
