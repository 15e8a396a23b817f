"""The console tools' parsing, formatting and exit codes (no broker)."""

from __future__ import annotations

import argparse
import json

import pytest

from kafkalite.cli.common import EXIT_USAGE, UsageError, read_properties, table
from kafkalite.cli.configs import parse_add_config
from kafkalite.cli.consume import Printer
from kafkalite.cli.main import main
from kafkalite.cli.produce import LineReader
from kafkalite.types import ConsumerRecord


def test_add_config_syntax_keeps_bracketed_lists() -> None:
    assert parse_add_config(["retention.ms=1000,cleanup.policy=[compact,delete]", "a=b=c"]) == {
        "retention.ms": "1000", "cleanup.policy": "compact,delete", "a": "b=c"}
    assert parse_add_config(["SCRAM-SHA-256=[iterations=8192,password=p,w]"]) == {
        "SCRAM-SHA-256": "iterations=8192,password=p,w"}
    with pytest.raises(UsageError, match="KEY=VALUE"):
        parse_add_config(["oops"])


def test_properties_file(tmp_path) -> None:
    path = tmp_path / "client.properties"
    path.write_text("# comment\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism : SCRAM-SHA-256\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
                    "  username=\"u\" password=\"p\";\n! also a comment\n")
    props = read_properties(str(path))
    assert props["security.protocol"] == "SASL_PLAINTEXT"
    assert props["sasl.mechanism"] == "SCRAM-SHA-256"
    assert props["sasl.jaas.config"].endswith('username="u" password="p";')
    with pytest.raises(UsageError, match="cannot read"):
        read_properties(str(tmp_path / "missing"))


def test_line_reader_follows_the_console_producer() -> None:
    plain = LineReader({}, False, None)
    assert plain.parse("hello", 1) == (None, "hello", [])
    keyed = LineReader({"parse.key": "true", "key.separator": ":"}, False, None)
    assert keyed.parse("k:v:w", 1) == ("k", "v:w", [])
    with pytest.raises(UsageError, match="line 3: no key separator"):
        keyed.parse("novalue", 3)
    headers = LineReader({"parse.headers": "true", "parse.key": "true", "null.marker": "NULL"}, False, None)
    assert headers.parse("a:1,b:NULL\tk\tNULL", 1) == ("k", None, [("a", b"1"), ("b", None)])
    assert LineReader({}, False, "\\t").key_separator == "\t"
    with pytest.raises(UsageError, match="unknown --property parse.kye"):
        LineReader({"parse.kye": "true"}, False, None)


def _args(**kw: object) -> argparse.Namespace:
    base = {"property": [], "print_key": False, "print_timestamp": False, "print_headers": False,
            "print_partition": False, "print_offset": False, "format": None, "json": False}
    base.update(kw)
    return argparse.Namespace(**base)


def test_consume_printer_formats() -> None:
    record = ConsumerRecord("t", 2, 7, 1000, 0, b"k", b"v\xff", [("h", b"x")], None)
    assert Printer(_args()).line(record) == "v\\xff"
    shown = Printer(_args(print_key=True, print_partition=True, print_offset=True, print_headers=True,
                          print_timestamp=True)).line(record)
    assert shown == "CreateTime:1000\tPartition:2\tOffset:7\th:x\tk\tv\\xff"
    props = Printer(_args(property=["print.key=true", "key.separator=|"])).line(record)
    assert props == "k|v\\xff"
    assert Printer(_args(format="hex")).line(record) == "76ff"
    assert json.loads(Printer(_args(json=True)).line(record)) == {
        "topic": "t", "partition": 2, "offset": 7, "timestamp": 1000, "timestamp_type": 0,
        "key": "k", "value": "v\\xff", "headers": [["h", "x"]]}
    assert Printer(_args(format="base64")).line(record) == "dv8="


def test_table_alignment(capsys) -> None:
    table(["A", "LONGER"], [(1, None), ("wide-cell", 2)])
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["A          LONGER", "1          -", "wide-cell  2"]


@pytest.mark.parametrize("argv, message", [
    (["topics", "--list"], "--bootstrap-server is required"),
    (["topics", "--bootstrap-server", "h:1"], "one of the arguments"),
    (["nosuch"], "invalid choice"),
    (["configs", "--bootstrap-server", "h:1", "--describe", "--entity-type", "bogus", "--entity-name", "x"],
     "unknown --entity-type 'bogus'"),
    (["topics", "--bootstrap-server", "nohostport", "--list"], "invalid address"),
])
def test_usage_errors_exit_2_with_one_line(argv, message, capsys, monkeypatch) -> None:
    monkeypatch.delenv("KAFKALITE_BOOTSTRAP_SERVERS", raising=False)
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


class _Listing:
    """Stands in for the admin client: one broker did not answer list_groups."""

    def __init__(self) -> None:
        from kafkalite.admin.group_types import GroupListing, GroupState, GroupType
        from kafkalite.admin.results import AdminResult, ItemResult, ListResult
        from kafkalite.errors import KafkaTimeoutError

        found = [GroupListing("billing", "consumer", GroupState.STABLE, GroupType.CLASSIC)]
        late = KafkaTimeoutError("list_groups did not complete in time", resource="broker 2")
        self.groups = ListResult("list_groups", found, AdminResult(
            "list_groups", {1: ItemResult(found), 2: ItemResult(error=late)}))

    def __enter__(self) -> _Listing:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def list_groups(self, **kwargs: object) -> object:
        return self.groups


def test_groups_list_prints_what_answered_and_fails_naming_the_silent_broker(capsys, monkeypatch) -> None:
    monkeypatch.setattr("kafkalite.cli.groups.admin_client", lambda args: _Listing())
    assert main(["groups", "--bootstrap-server", "h:1", "--list"]) == 1
    out, err = capsys.readouterr()
    assert out == "billing\n"
    assert err.startswith("Error: broker 2 did not answer, its groups are missing: ") and err.count("\n") == 1


# ------------------------------------------------------------------ serializer options


def test_format_names_and_java_classes() -> None:
    from kafkalite.cli.serdes import format_name

    assert format_name("STRING", "--value-serializer") == "str"
    assert format_name("jsonschema", "--value-serializer") == "json-schema"
    assert format_name("float", "--value-serializer") == "double"
    assert format_name("org.apache.kafka.common.serialization.LongDeserializer", "--key-deserializer") == "long"
    assert format_name("io.confluent.kafka.serializers.KafkaAvroSerializer", "--value-serializer") == "avro"
    assert format_name("io.confluent.kafka.serializers.protobuf.KafkaProtobufDeserializer", "x") == "protobuf"
    with pytest.raises(UsageError, match=r"unknown --value-serializer 'avor' \(known: avro, bytes, double"):
        format_name("avor", "--value-serializer")


def test_encoders_parse_each_builtin_format() -> None:
    from kafkalite.cli.serdes import Encoder

    def enc(fmt: str, text: str) -> bytes | None:
        return Encoder(fmt, False, topic="t").encode("t", text, [], 4)

    assert enc("bytes", "héllo") == "héllo".encode()
    assert enc("int", " -2 ") == b"\xff\xff\xff\xfe"
    assert enc("long", "1") == b"\x00" * 7 + b"\x01"
    assert enc("float32", "1.5") == b"?\xc0\x00\x00"
    assert enc("json", '{"a": [1, "ü"]}') == '{"a":[1,"ü"]}'.encode()
    assert Encoder("str", True, topic="t").encode("t", None, [], 1) is None  # null.marker stays null
    with pytest.raises(UsageError, match=r"^line 4: the value 'x' is not an integer \(--value-serializer int\)$"):
        enc("int", "x")
    with pytest.raises(UsageError, match=r"^line 4: the value '\{' is not JSON \(--value-serializer json\): "):
        enc("json", "{")
    with pytest.raises(UsageError, match="a value schema needs --value-serializer avro"):
        Encoder("str", False, topic="t", schema="{}")
    with pytest.raises(UsageError, match="--value-serializer avro needs --schema-registry-url"):
        Encoder("avro", False, topic="t", schema='"string"')
    with pytest.raises(UsageError, match="--key-serializer json-schema needs a schema"):
        Encoder("json-schema", True, topic="t", registry={"schema.registry.url": "http://127.0.0.1:9"})


def test_decoded_values_print_as_json() -> None:
    import datetime
    import decimal
    import uuid

    from kafkalite.cli.serdes import Decoder, json_text

    assert json_text({"b": b"\x00\xff", "d": decimal.Decimal("1.10"), "t": datetime.date(2024, 1, 31),
                      "u": uuid.UUID(int=1), "n": None, "l": ("x", 1.5)}) == (
        '{"b":"\\u0000ÿ","d":"1.10","t":"2024-01-31","u":"00000000-0000-0000-0000-000000000001","n":null,'
        '"l":["x",1.5]}')
    record = ConsumerRecord("t", 0, 3, 1000, 0, b"\x00\x00\x00\x07", b'{"qty":3}', [], None)
    decoders = (Decoder("int", True), Decoder("json", False))
    assert Printer(_args(print_key=True), None, decoders).line(record) == '7\t{"qty":3}'
    as_json = json.loads(Printer(_args(json=True), None, decoders).line(record))
    assert (as_json["key"], as_json["value"]) == (7, {"qty": 3})
    with pytest.raises(UsageError, match="--value-deserializer avro needs --schema-registry-url"):
        Decoder("avro", False)


def test_registry_options_merge_and_check() -> None:
    from kafkalite.cli.serdes import registry_settings

    args = argparse.Namespace(schema_registry_url=None, schema_registry_property=["basic.auth.user.info=u:p"])
    assert registry_settings(args, {"schema.registry.url": "http://a", "parse.key": "true"}, {}) == {
        "schema.registry.url": "http://a", "basic.auth.user.info": "u:p"}
    # A shared client properties file: request.timeout.ms / ssl.ca.location are the Kafka client's.
    shared = {"request.timeout.ms": "5000", "ssl.ca.location": "ca.pem", "schema.registry.url": "http://c",
              "schema.registry.basic.auth.user.info": "x:y"}
    args.schema_registry_property = []
    assert registry_settings(args, {}, shared) == {"schema.registry.url": "http://c",
                                                   "schema.registry.basic.auth.user.info": "x:y"}
    args.schema_registry_property = ["basic.auth.user.info=u:p"]
    args.schema_registry_url = "http://b"
    assert registry_settings(args, {"schema.registry.url": "http://a"}, {"url": "http://c"})[
        "schema.registry.url"] == "http://b"
    args.schema_registry_property = ["basic.auth.userinfo=u:p"]
    with pytest.raises(UsageError, match="unknown --schema-registry-property 'basic.auth.userinfo'; did you mean"):
        registry_settings(args, {}, {})
