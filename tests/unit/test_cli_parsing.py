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
    assert plain.parse("hello", 1) == (None, b"hello", [])
    keyed = LineReader({"parse.key": "true", "key.separator": ":"}, False, None)
    assert keyed.parse("k:v:w", 1) == (b"k", b"v:w", [])
    with pytest.raises(UsageError, match="line 3: no key separator"):
        keyed.parse("novalue", 3)
    headers = LineReader({"parse.headers": "true", "parse.key": "true", "null.marker": "NULL"}, False, None)
    assert headers.parse("a:1,b:NULL\tk\tNULL", 1) == (b"k", None, [("a", b"1"), ("b", None)])
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
