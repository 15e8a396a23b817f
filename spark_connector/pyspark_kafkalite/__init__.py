"""kafkalite's PySpark data source: ``format("kafkalite")``, Spark's Kafka connector
without the jar.

PySpark (>= 4.0) registers installed top-level modules named ``pyspark_*`` that have a
``DefaultSource`` by itself, so after ``pip install kafkalite[spark]`` this works with
no registration call::

    df = (spark.read.format("kafkalite")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "orders")
          .load())

``spark.dataSource.register(KafkaLiteDataSource)`` registers it explicitly (e.g. in a
session started before the package was installed). See ``docs/spark.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark_kafkalite.source import KafkaLiteDataSource

    #: What PySpark's data source lookup registers (under ``KafkaLiteDataSource.name()``).
    DefaultSource = KafkaLiteDataSource

__all__ = ["DefaultSource", "KafkaLiteDataSource"]


def __getattr__(name: str) -> Any:
    # Lazy (PEP 562): a write task's Python worker unpickles the writer, which imports
    # this package; importing the planner, the reader and the admin client there as
    # well cost ~1.5 s of CPU per worker. The driver's lookup of DefaultSource imports
    # the data source on first access.
    if name in ("DefaultSource", "KafkaLiteDataSource"):
        from pyspark_kafkalite.source import KafkaLiteDataSource

        return KafkaLiteDataSource
    # PEP 562: hasattr() and `from ... import` expect AttributeError here.
    raise AttributeError(f"module 'pyspark_kafkalite' has no attribute {name!r}")
