"""Spark's Kafka source schema, the one the data source and ``read_kafka`` return.

No Spark Python Data Source API here: :func:`pyspark_kafkalite.frames.read_kafka`
uses it on every Spark release (the Arrow side is :func:`pyspark_kafkalite.arrow.arrow_schema`).

Example::

    kafka_schema(include_headers=True).simpleString()
    # 'struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,...,headers:array<...>>'
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from kafkalite.errors import ConfigError
from pyspark_kafkalite.options import ReadOptions

HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))


def kafka_schema(include_headers: bool) -> StructType:
    """Spark's Kafka source schema (``includeHeaders`` adds ``headers``)."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


def check_schema(schema: StructType, opts: ReadOptions) -> None:
    """A user-given schema must be the Kafka schema (the source has a fixed one)."""
    expected = kafka_schema(opts.include_headers)
    if schema != expected:
        raise ConfigError(
            f"the kafkalite source has a fixed schema ({expected.simpleString()}); do not pass "
            f".schema(...), got {schema.simpleString()}")
