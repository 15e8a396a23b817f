"""Record batches interoperate with Kafka's own Java tools, for every codec.

kafkalite-encoded batches (headers, null keys and values) written with a raw Produce
request are read back exactly by Kafka's console consumer; batches written by Kafka's
console producer decode exactly in kafkalite.
"""

from __future__ import annotations

import time

import pytest

from kafkalite.protocol import compression
from kafkalite.protocol.record_builder import RecordBatchBuilder
from tests.helpers.raw import fetch_raw, produce_raw

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
NULL = "<NULL>"

# (key, value, headers): null keys/values, empty bytes, duplicate and null headers, UTF-8.
RECORDS: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]] = [
    (b"k1", b"hello", [("h1", b"v1"), ("h1", b"v2")]),
    (None, b"no-key", [("trace", b"t-1")]),
    (b"k3", None, [("h", None)]),
    (b"k4", "wert-\u00fc\u00df-\u6f22".encode(), [("\u00e9t\u00e9", b"x")]),
    (b"", b"empty-key", [("e", b"")]),
] + [(f"key-{i}".encode(), f"value-{i}".encode() * 20, [("i", str(i).encode())]) for i in range(50)]


def _text(b: bytes | None) -> str:
    return NULL if b is None else b.decode()


def _console_line(key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes | None]]) -> str:
    hdrs = ",".join(f"{k}:{_text(v)}" for k, v in headers) if headers else "NO_HEADERS"
    return f"{hdrs}|{_text(key)}|{_text(value)}"


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.timeout(180)
def test_kafkalite_batches_are_read_by_java_console_consumer(kafka_broker, topic_factory, codec) -> None:
    topic = topic_factory(partitions=1)
    builder = RecordBatchBuilder(compression=compression.codec_id(codec), batch_size=1 << 20)
    now = int(time.time() * 1000)
    for i, (key, value, headers) in enumerate(RECORDS):
        assert builder.try_append(now + i, key, value, headers) == i
    assert produce_raw(kafka_broker.bootstrap, topic, 0, builder.build()) == 0

    done = kafka_broker.run_tool("kafka-console-consumer", [
        "--bootstrap-server", kafka_broker.bootstrap, "--topic", topic, "--from-beginning",
        "--max-messages", str(len(RECORDS)), "--timeout-ms", "60000",
        "--formatter-property", "print.key=true", "--formatter-property", "print.headers=true",
        "--formatter-property", f"null.literal={NULL}", "--formatter-property", "key.separator=|",
        "--formatter-property", "print.timestamp=true",
    ], timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert len(lines) == len(RECORDS)
    for i, (line, (key, value, headers)) in enumerate(zip(lines, RECORDS)):
        stamp, rest = line.split("|", 1)
        assert stamp == f"CreateTime:{now + i}"
        assert rest == _console_line(key, value, headers)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.timeout(180)
def test_java_console_producer_batches_decode_in_kafkalite(kafka_broker, topic_factory, codec) -> None:
    topic = topic_factory(partitions=1)
    # The console producer cannot express a null header key or a key-less line with
    # parse.key, so this direction covers what it can write: keys, null markers, headers.
    rows = [(f"k{i}", f"v{i}-\u00fc" * (i % 7 + 1), [("a", f"{i}"), ("a", "dup")]) for i in range(200)]
    rows.append((NULL, "value-with-null-key", [("n", NULL)]))
    rows.append(("k-null-value", NULL, [("x", "y")]))
    text = "".join(f"{','.join(f'{k}:{v}' for k, v in hs)}#{k}|{v}\n" for k, v, hs in rows)
    done = kafka_broker.run_tool("kafka-console-producer", [
        "--bootstrap-server", kafka_broker.bootstrap, "--topic", topic, "--compression-codec", codec,
        "--batch-size", "1000000", "--timeout", "1000",
        "--reader-property", "parse.key=true", "--reader-property", "key.separator=|",
        "--reader-property", "parse.headers=true", "--reader-property", "headers.delimiter=#",
        "--reader-property", "headers.separator=,", "--reader-property", "headers.key.separator=:",
        "--reader-property", f"null.marker={NULL}",
    ], input=text, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]

    batches, _ = fetch_raw(kafka_broker.bootstrap, topic, 0, min_records=len(rows))
    assert {b.compression for b in batches} == {compression.codec_id(codec)}
    records = [r for b in batches for r in b.records()]
    assert [r.offset for r in records] == list(range(len(rows)))

    def nullable(s: str) -> bytes | None:
        return None if s == NULL else s.encode()

    for record, (key, value, headers) in zip(records, rows):
        assert record.key == nullable(key)
        assert record.value == nullable(value)
        assert record.headers == [(k, nullable(v)) for k, v in headers]
        assert record.timestamp > 0 and record.timestamp_type == 0
