"""``kafkalite produce`` / ``consume`` with serializers and a Schema Registry, through the
installed command, cross-checked both ways with kafkalite's serdes and confluent-kafka's
(its librdkafka producer and consumer, its Avro / JSON Schema / Protobuf serdes)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka.schema_registry.avro import AvroDeserializer as ConfluentAvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentAvroSerializer
from confluent_kafka.schema_registry.json_schema import (
    JSONDeserializer as ConfluentJsonDeserializer,
)
from confluent_kafka.schema_registry.json_schema import JSONSerializer as ConfluentJsonSerializer
from confluent_kafka.schema_registry.protobuf import (
    ProtobufDeserializer as ConfluentProtobufDeserializer,
)

from kafkalite import Consumer, Producer, TopicPartition
from kafkalite.serialization import (
    AvroDeserializer,
    AvroSerializer,
    JsonSchemaDeserializer,
    JsonSchemaSerializer,
    SchemaRegistryClient,
)
from kafkalite.serialization.wire import parse_header
from tests.helpers.schemas import user_pb2
from tests.helpers.serdes import avro_record, ctx
from tests.integration.admin_support import kafkalite

pytestmark = pytest.mark.broker

ORDER = avro_record("Order", [("id", "string"), ("qty", "int"), ("note", ["null", "string"], None),
                              ("tags", {"type": "array", "items": "string"}, [])], namespace="shop")
ORDER_JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
    "properties": {"id": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
    "required": ["id", "qty"],
}


def raw_records(bootstrap: str, topic: str, n: int, timeout: float = 60.0) -> list[Any]:
    """The first ``n`` records of partition 0 as bytes, read with kafkalite's Consumer."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        out: list[Any] = []
        deadline = time.monotonic() + timeout
        while len(out) < n:
            assert time.monotonic() < deadline, f"got {len(out)} of {n} records within {timeout}s"
            out.extend(consumer.poll(0.5))
        return out
    finally:
        consumer.close()


def confluent_raw(bootstrap: str, topic: str, n: int, timeout: float = 60.0) -> list[Any]:
    """The same with confluent-kafka's (librdkafka) consumer."""
    consumer = ConfluentConsumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-confluent",
                                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        out: list[Any] = []
        deadline = time.monotonic() + timeout
        while len(out) < n:
            assert time.monotonic() < deadline, f"confluent-kafka got {len(out)} of {n} records"
            msg = consumer.poll(0.5)
            if msg is not None:
                assert msg.error() is None, msg.error()
                out.append(msg)
        return out
    finally:
        consumer.close()


def confluent_produce(bootstrap: str, topic: str, values: list[bytes], keys: list[bytes | None] | None = None) -> None:
    producer = ConfluentProducer({"bootstrap.servers": bootstrap})
    for i, value in enumerate(values):
        producer.produce(topic, value=value, key=None if keys is None else keys[i], partition=0)
    assert producer.flush(60) == 0


def one_line_error(done: Any, code: int) -> str:
    assert done.returncode == code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), done.stderr
    return str(lines[0])


def test_avro_produced_by_the_cli_reads_back_with_kafkalite_and_confluent(
        kafka_broker: Any, topic_factory: Any, schema_registry: Any, sr_client: SchemaRegistryClient,
        confluent_sr: Any, tmp_path: Path) -> None:
    b, url = kafka_broker.bootstrap, schema_registry.url
    topic = topic_factory()
    schema_file = tmp_path / "order.avsc"
    schema_file.write_text(ORDER)
    lines = [
        'k1\t{"id": "o-1", "qty": 3, "note": null, "tags": ["a"]}',
        'k2\t{"id": "o-2", "qty": 4, "note": "plain union value", "tags": []}',
        # Avro's own JSON encoding, as kafka-avro-console-producer reads it: the union branch named.
        'k3\t{"id": "o-3", "qty": 5, "note": {"string": "named branch"}, "tags": ["x", "y"]}',
        'k4\t{"id": "o-4", "qty": -1}',  # defaults fill the rest
    ]
    done = kafkalite("produce", "--bootstrap-server", b, "--topic", topic, "--parse-key",
                     "--key-serializer", "str", "--value-serializer", "avro", "--value-schema-file",
                     str(schema_file), "--schema-registry-url", url, input="\n".join(lines) + "\n")
    assert done.returncode == 0, done.stderr
    assert done.stderr == "Produced 4 record(s) to " + topic + "\n"

    expected = [
        {"id": "o-1", "qty": 3, "note": None, "tags": ["a"]},
        {"id": "o-2", "qty": 4, "note": "plain union value", "tags": []},
        {"id": "o-3", "qty": 5, "note": "named branch", "tags": ["x", "y"]},
        {"id": "o-4", "qty": -1, "note": None, "tags": []},
    ]
    registered = sr_client.get_latest_version(f"{topic}-value")
    assert json.loads(registered.schema.schema_str) == json.loads(ORDER)

    ours = raw_records(b, topic, 4)
    assert [r.key for r in ours] == [b"k1", b"k2", b"k3", b"k4"]
    assert {parse_header(r.value)[0] for r in ours} == {registered.schema_id}
    reader = AvroDeserializer({"schema.registry.url": url})
    assert [reader.deserialize(topic, r.value) for r in ours] == expected

    theirs = confluent_raw(b, topic, 4)
    confluent_reader = ConfluentAvroDeserializer(confluent_sr)
    assert [confluent_reader(m.value(), ctx(topic)) for m in theirs] == expected
    assert [m.value() for m in theirs] == [r.value for r in ours]


def test_avro_written_by_kafkalite_and_confluent_printed_by_the_cli(
        kafka_broker: Any, topic_factory: Any, schema_registry: Any, confluent_sr: Any) -> None:
    b, url = kafka_broker.bootstrap, schema_registry.url
    topic = topic_factory()
    conf = {"schema.registry.url": url}
    ours = Producer({"bootstrap.servers": b, "key.serializer": "str",
                     "value.serializer": AvroSerializer(ORDER, conf)})
    try:
        ours.send(topic, {"id": "a-1", "qty": 1, "note": "ünïcode", "tags": []}, key="k1", partition=0).result(60)
    finally:
        ours.close(10)
    serializer = ConfluentAvroSerializer(confluent_sr, ORDER)
    confluent_produce(b, topic, [serializer({"id": "a-2", "qty": 2, "note": None, "tags": ["t"]}, ctx(topic))],
                      [b"k2"])

    text = kafkalite("consume", "--bootstrap-server", b, "--topic", topic, "--from-beginning", "--max-messages", "2",
                     "--value-deserializer", "avro", "--schema-registry-url", url, "--print-key")
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines() == [
        'k1\t{"id":"a-1","qty":1,"note":"ünïcode","tags":[]}',
        'k2\t{"id":"a-2","qty":2,"note":null,"tags":["t"]}',
    ]
    as_json = kafkalite("consume", "--bootstrap-server", b, "--topic", topic, "--partition", "0", "--offset",
                        "earliest", "--max-messages", "2", "--value-deserializer", "avro", "--key-deserializer",
                        "str", "--schema-registry-url", url, "--json")
    records = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [(r["key"], r["value"]) for r in records] == [
        ("k1", {"id": "a-1", "qty": 1, "note": "ünïcode", "tags": []}),
        ("k2", {"id": "a-2", "qty": 2, "note": None, "tags": ["t"]})]

    # Confluent's way of saying it: the Avro formatter class, the registry as a property,
    # schema ids printed after the value.
    confluent_style = kafkalite("consume", "--bootstrap-server", b, "--topic", topic, "--from-beginning",
                                "--max-messages", "1", "--formatter",
                                "io.confluent.kafka.formatter.AvroMessageFormatter", "--property",
                                f"schema.registry.url={url}", "--property", "print.schema.ids=true",
                                "--property", "key.deserializer=org.apache.kafka.common.serialization."
                                "StringDeserializer", "--property", "print.key=true")
    assert confluent_style.returncode == 0, confluent_style.stderr
    schema_id = SchemaRegistryClient(conf).get_latest_version(f"{topic}-value").schema_id
    assert confluent_style.stdout.splitlines() == [
        f'k1\t{{"id":"a-1","qty":1,"note":"ünïcode","tags":[]}}\t{schema_id}']
    # The formatter alone: the (plain string) keys are not printed, so not read as Avro.
    values_only = kafkalite("consume", "--bootstrap-server", b, "--topic", topic, "--from-beginning",
                            "--max-messages", "2", "--formatter", "io.confluent.kafka.formatter.AvroMessageFormatter",
                            "--property", f"schema.registry.url={url}")
    assert values_only.returncode == 0, values_only.stderr
    assert values_only.stdout.splitlines() == text.stdout.replace("k1\t", "").replace("k2\t", "").splitlines()

    # Written again with that registered id (kafka-avro-console-producer's value.schema.id).
    again = kafkalite("produce", "--bootstrap-server", b, "--topic", topic, "--property",
                      f"value.schema.id={schema_id}", "--schema-registry-url", url,
                      input='{"id": "a-3", "qty": 3, "note": null, "tags": []}\n')
    assert again.returncode == 0, again.stderr
    third = raw_records(b, topic, 3)[2]
    assert parse_header(third.value)[0] == schema_id
    assert AvroDeserializer(conf).deserialize(topic, third.value) == {"id": "a-3", "qty": 3, "note": None,
                                                                      "tags": []}


def test_confluent_property_names_key_and_value_schemas(kafka_broker: Any, topic_factory: Any,
                                                        schema_registry: Any, confluent_sr: Any) -> None:
    """kafka-avro-console-producer's spelling: --property value.schema / key.schema / parse.key /
    schema.registry.url; a schema alone means Avro."""
    b, url = kafka_broker.bootstrap, schema_registry.url
    topic = topic_factory()
    key_schema = avro_record("OrderKey", [("id", "long")], namespace="shop")
    done = kafkalite("produce", "--bootstrap-server", b, "--topic", topic, "--property", "parse.key=true",
                     "--property", "key.separator=|", "--property", f"key.schema={key_schema}",
                     "--property", f"value.schema={ORDER}", "--property", f"schema.registry.url={url}",
                     input='{"id": 7}|{"id": "o-7", "qty": 7}\n')
    assert done.returncode == 0, done.stderr
    (msg,) = confluent_raw(b, topic, 1)
    assert ConfluentAvroDeserializer(confluent_sr)(msg.key(), ctx(topic, is_key=True)) == {"id": 7}
    assert ConfluentAvroDeserializer(confluent_sr)(msg.value(), ctx(topic)) == {
        "id": "o-7", "qty": 7, "note": None, "tags": []}
    shown = kafkalite("consume", "--bootstrap-server", b, "--topic", topic, "--from-beginning", "--max-messages",
                      "1", "--key-deserializer", "avro", "--value-deserializer", "avro",
                      "--schema-registry-url", url, "--print-key", "--property", "key.separator=|")
    assert shown.stdout.splitlines() == ['{"id":7}|{"id":"o-7","qty":7,"note":null,"tags":[]}']


def test_json_schema_both_ways(kafka_broker: Any, topic_factory: Any, schema_registry: Any, confluent_sr: Any,
                               tmp_path: Path) -> None:
    b, url = kafka_broker.bootstrap, schema_registry.url
    topic = topic_factory()
    schema_file = tmp_path / "order.json"
    schema_file.write_text(json.dumps(ORDER_JSON_SCHEMA))
    done = kafkalite("produce", "--bootstrap-server", b, "--topic", topic, "--value-serializer", "json-schema",
                     "--value-schema-file", str(schema_file), "--schema-registry-url", url,
                     input='{"id": "j-1", "qty": 1}\n{"id": "j-2", "qty": 2, "extra": ["kept"]}\n')
    assert done.returncode == 0, done.stderr
    expected = [{"id": "j-1", "qty": 1}, {"id": "j-2", "qty": 2, "extra": ["kept"]}]
    ours = raw_records(b, topic, 2)
    reader = JsonSchemaDeserializer({"schema.registry.url": url})
    assert [reader.deserialize(topic, r.value) for r in ours] == expected
    confluent_reader = ConfluentJsonDeserializer(None, schema_registry_client=confluent_sr)
    assert [confluent_reader(m.value(), ctx(topic)) for m in confluent_raw(b, topic, 2)] == expected

    # The other way: records of kafkalite's and Confluent's JSON Schema serializers, printed.
    conf = {"schema.registry.url": url}
    writer = JsonSchemaSerializer(ORDER_JSON_SCHEMA, conf)
    theirs = ConfluentJsonSerializer(json.dumps(ORDER_JSON_SCHEMA), confluent_sr)
    confluent_produce(b, topic, [writer.serialize(topic, {"id": "j-3", "qty": 3}),
                                 theirs({"id": "j-4", "qty": 4}, ctx(topic))])
    shown = kafkalite("consume", "--bootstrap-server", b, "--topic", topic, "--from-beginning", "--max-messages",
                      "4", "--value-deserializer", "json-schema", "--schema-registry-url", url)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == ['{"id":"j-1","qty":1}', '{"id":"j-2","qty":2,"extra":["kept"]}',
                                         '{"id":"j-3","qty":3}', '{"id":"j-4","qty":4}']
    as_json = kafkalite("consume", "--bootstrap-server", b, "--topic", topic, "--from-beginning", "--max-messages",
                        "4", "--value-deserializer", "json-schema", "--schema-registry-url", url, "--json")
    assert [json.loads(line)["value"] for line in as_json.stdout.splitlines()] == [
        *expected, {"id": "j-3", "qty": 3}, {"id": "j-4", "qty": 4}]


def test_protobuf_with_a_generated_class_and_read_without_one(kafka_broker: Any, topic_factory: Any,
                                                              schema_registry: Any, tmp_path: Path) -> None:
    b, url = kafka_broker.bootstrap, schema_registry.url
    topic = topic_factory()
    done = kafkalite("produce", "--bootstrap-server", b, "--topic", topic, "--value-serializer", "protobuf",
                     "--value-message-type", "tests.helpers.schemas.user_pb2:User", "--schema-registry-url", url,
                     input='{"name": "Ann", "age": 41}\n{"name": "Bo"}\n')
    assert done.returncode == 0, done.stderr
    reader = ConfluentProtobufDeserializer(user_pb2.User, {"use.deprecated.format": False})
    assert [reader(m.value(), ctx(topic)) for m in confluent_raw(b, topic, 2)] == [
        user_pb2.User(name="Ann", age=41), user_pb2.User(name="Bo")]
    # No generated class at hand: the message type is built from the registry's schema.
    shown = kafkalite("consume", "--bootstrap-server", b, "--topic", topic, "--from-beginning", "--max-messages",
                      "2", "--value-deserializer", "protobuf", "--schema-registry-url", url)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == ['{"name":"Ann","age":41}', '{"name":"Bo"}']
    typed = kafkalite("consume", "--bootstrap-server", b, "--topic", topic, "--from-beginning", "--max-messages",
                      "1", "--value-message-type", "tests.helpers.schemas.user_pb2:User", "--json")
    assert json.loads(typed.stdout)["value"] == {"name": "Ann", "age": 41}

    missing = kafkalite("produce", "--bootstrap-server", b, "--topic", topic, "--value-serializer", "protobuf",
                        "--schema-registry-url", url, input="{}\n")
    assert "--value-message-type module:Class" in one_line_error(missing, 2)


def test_builtin_serializers_round_trip(kafka_broker: Any, topic_factory: Any) -> None:
    b = kafka_broker.bootstrap
    topic = topic_factory()
    done = kafkalite("produce", "--bootstrap-server", b, "--topic", topic, "--parse-key", "--key-serializer", "int",
                     "--value-serializer", "double", input="1\t2.5\n-7\t1e3\n")
    assert done.returncode == 0, done.stderr
    assert [(r.key, r.value) for r in raw_records(b, topic, 2)] == [
        (b"\x00\x00\x00\x01", b"@\x04\x00\x00\x00\x00\x00\x00"), (b"\xff\xff\xff\xf9", b"@\x8f@\x00\x00\x00\x00\x00")]
    shown = kafkalite("consume", "--bootstrap-server", b, "--topic", topic, "--from-beginning", "--max-messages",
                      "2", "--key-deserializer", "org.apache.kafka.common.serialization.IntegerDeserializer",
                      "--value-deserializer", "double", "--print-key")
    assert shown.stdout.splitlines() == ["1\t2.5", "-7\t1000.0"]
    bad = kafkalite("produce", "--bootstrap-server", b, "--topic", topic, "--value-serializer", "long",
                    input="12\nabc\n")
    # The record before the bad line was written and is counted; then the error, one line.
    assert bad.returncode == 2 and bad.stderr.splitlines() == [
        f"Produced 1 record(s) to {topic}", "Error: line 2: the value 'abc' is not an integer (--value-serializer long)"]


def test_bad_input_is_one_line_and_a_nonzero_exit(kafka_broker: Any, topic_factory: Any, schema_registry: Any,
                                                  tmp_path: Path) -> None:
    b, url = kafka_broker.bootstrap, schema_registry.url
    topic = topic_factory()
    schema_file = tmp_path / "order.avsc"
    schema_file.write_text(ORDER)
    avro = ["produce", "--bootstrap-server", b, "--topic", topic, "--value-serializer", "avro",
            "--value-schema-file", str(schema_file)]

    mismatch = kafkalite(*avro, "--schema-registry-url", url, "--transactional-id", f"{topic}-tx",
                         input='{"id": "ok", "qty": 1}\n{"id": "bad", "qty": "many"}\n')
    assert mismatch.returncode == 2 and "Traceback" not in mismatch.stderr
    error = [line for line in mismatch.stderr.splitlines() if line.startswith("Error: ")]
    assert len(error) == 1 and error[0].startswith("Error: line 2: the value does not fit") and "qty" in error[0]
    assert "the transaction was aborted" in mismatch.stderr

    not_json = kafkalite(*avro, "--schema-registry-url", url, input='{"id": \n')
    assert "line 1: the value '{\"id\": ' is not JSON" in one_line_error(not_json, 2)

    started = time.monotonic()
    unreachable = kafkalite(*avro, "--schema-registry-url", "http://127.0.0.1:9", input='{"id": "x", "qty": 1}\n')
    line = one_line_error(unreachable, 1)
    assert "cannot reach the Schema Registry at http://127.0.0.1:9" in line and f"topic '{topic}'" in line
    assert time.monotonic() - started < 60

    unknown = kafkalite("produce", "--bootstrap-server", b, "--topic", topic, "--value-serializer", "avor",
                        input="x\n")
    assert "unknown --value-serializer 'avor' (known: avro," in one_line_error(unknown, 2)
    unknown = kafkalite("consume", "--bootstrap-server", b, "--topic", topic, "--key-deserializer", "yaml")
    assert "unknown --key-deserializer 'yaml'" in one_line_error(unknown, 2)
    no_schema = kafkalite("produce", "--bootstrap-server", b, "--topic", topic, "--value-serializer", "avro",
                          "--schema-registry-url", url, input="{}\n")
    assert "--value-serializer avro needs a schema" in one_line_error(no_schema, 2)
    no_registry = kafkalite("consume", "--bootstrap-server", b, "--topic", topic, "--value-deserializer", "avro")
    assert "needs --schema-registry-url" in one_line_error(no_registry, 2)
    bad_schema = kafkalite(*avro[:-2], "--value-schema", '{"type": "recrod", "name": "X", "fields": []}',
                           "--schema-registry-url", url, input="{}\n")
    assert "value schema: invalid Avro schema" in one_line_error(bad_schema, 2)


def test_records_that_do_not_decode(kafka_broker: Any, topic_factory: Any, schema_registry: Any) -> None:
    b, url = kafka_broker.bootstrap, schema_registry.url
    topic = topic_factory()
    good = AvroSerializer(ORDER, {"schema.registry.url": url}).serialize(topic, {"id": "g", "qty": 1})
    assert good is not None
    confluent_produce(b, topic, [b"plain text, no magic byte", good])
    base = ["consume", "--bootstrap-server", b, "--topic", topic, "--from-beginning", "--value-deserializer", "avro",
            "--schema-registry-url", url]
    stopped = kafkalite(*base, "--max-messages", "2")
    assert stopped.returncode == 1 and stopped.stdout == "" and "Traceback" not in stopped.stderr
    assert stopped.stderr.splitlines()[0].startswith(
        "Error: cannot deserialize the value at partition 0, offset 0 with avro: ")
    assert stopped.stderr.splitlines()[1:] == ["Processed a total of 0 messages"]
    skipped = kafkalite(*base, "--max-messages", "1", "--skip-message-on-error")
    assert skipped.returncode == 0, skipped.stderr
    assert skipped.stdout.splitlines() == ['{"id":"g","qty":1,"note":null,"tags":[]}']
    assert "offset 0" in skipped.stderr and "Processed a total of 1 messages" in skipped.stderr

    unreachable = kafkalite("consume", "--bootstrap-server", b, "--topic", topic, "--partition", "0", "--offset",
                            "1", "--max-messages", "1", "--value-deserializer", "avro", "--schema-registry-url",
                            "http://127.0.0.1:9", "--schema-registry-property", "max.retries=0")
    assert unreachable.returncode == 1 and unreachable.stdout == "" and "Traceback" not in unreachable.stderr
    first, total = unreachable.stderr.splitlines()
    assert first.startswith("Error: cannot deserialize the value at partition 0, offset 1 with avro: cannot reach "
                            "the Schema Registry at http://127.0.0.1:9") and f"topic '{topic}'" in first
    assert total == "Processed a total of 0 messages"
