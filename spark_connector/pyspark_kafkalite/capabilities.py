"""What the running PySpark can do for kafkalite, found by looking, never by version.

``format("kafkalite")`` (batch and streaming) needs Spark's Python Data Source API
(``pyspark.sql.datasource``), which open-source PySpark has from 4.0 on and some
3.5-based vendor builds carry as a backport under their 3.5 version number. So the
checks here import the API and look for its classes; the version string only goes
into messages. Where the API is missing, :func:`pyspark_kafkalite.read_kafka`,
:func:`~pyspark_kafkalite.write_kafka` and :func:`~pyspark_kafkalite.read_kafka_incremental`
(``mapInArrow``, every release) do batch reads and writes, and a streaming read gets an
error saying what to use instead.

Example::

    if has_datasource_api():
        spark.dataSource.register(KafkaLiteDataSource)
"""

from __future__ import annotations

from kafkalite.errors import ConfigError

#: The first open-source Spark release with the Python Data Source API (and streaming reads on it).
DATASOURCE_API_RELEASE = "Spark 4.0"
#: Options that bound the micro-batches of a streaming read: no batch read can honour them.
STREAMING_READ_OPTIONS = ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay", "maxBytesPerTrigger")
#: Where a job without streaming reads gets Kafka's records incrementally instead.
INSTEAD_OF_STREAMING = (
    "read_kafka_incremental(spark, checkpoint, options) in a scheduled job or inside foreachBatch of "
    "another stream (see docs/spark.md, 'Spark 3.5'), or Spark's JVM connector format('kafka') "
    "(org.apache.spark:spark-sql-kafka-0-10)")


def has_datasource_api() -> bool:
    """Whether this PySpark has the Python Data Source API (``DataSource`` and the stream reader).

    Example::

        from pyspark_kafkalite import has_datasource_api

        print(has_datasource_api())      # True with PySpark 4.0+, which format("kafkalite") needs
    """
    import importlib

    try:
        datasource = importlib.import_module("pyspark.sql.datasource")
    except ImportError:
        return False
    return all(hasattr(datasource, name) for name in ("DataSource", "DataSourceReader", "DataSourceStreamReader"))


def pyspark_version() -> str:
    """PySpark's version, for messages only."""
    import pyspark

    return str(getattr(pyspark, "__version__", "unknown"))


def require_streaming_reads(what: str) -> None:
    """Raise ConfigError naming ``what`` when this PySpark cannot run a streaming read
    on a Python source."""
    if has_datasource_api():
        return
    raise ConfigError(
        f"{what} needs a streaming read on a Python data source, which PySpark {pyspark_version()} cannot run: "
        f"Spark's Python Data Source API (streaming reads included) first shipped in {DATASOURCE_API_RELEASE}. "
        f"On this Spark use {INSTEAD_OF_STREAMING}")


def refuse_streaming_read_options(options: dict[str, str], function: str) -> None:
    """A batch read given a streaming trigger option: an error naming it and where it applies."""
    given = {str(k).lower(): k for k in options}
    for name in STREAMING_READ_OPTIONS:
        if name.lower() in given:
            where = ('spark.readStream.format("kafkalite")' if has_datasource_api() else
                     f"a streaming read, which needs {DATASOURCE_API_RELEASE} or later (this is PySpark "
                     f"{pyspark_version()}, without Spark's Python Data Source API)")
            raise ConfigError(
                f"option '{name}' bounds the micro-batches of a streaming read; {function}() is one batch read "
                f"and cannot honour it. It applies to {where}; for a bounded read per run use "
                "read_kafka_incremental(spark, checkpoint, options), which honours maxOffsetsPerTrigger and "
                "maxBytesPerTrigger on every Spark release")
