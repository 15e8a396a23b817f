"""``python -m kafkalite.testing up`` starts a broker for people: Kafka's own default
``auto.create.topics.enable=true`` unless ``--no-auto-create-topics`` (the pytest
fixtures keep it off)."""

from __future__ import annotations

from pathlib import Path

from kafkalite.testing.__main__ import build_parser, build_target
from kafkalite.testing.cluster import LocalCluster
from kafkalite.testing.properties import server_properties


def _auto_create(argv: list[str], tmp_path: Path) -> list[str]:
    args = build_parser().parse_args(["up", *argv])
    target = build_target(args, tmp_path / "run", 19092)
    brokers = target.brokers if isinstance(target, LocalCluster) else [target]
    return [server_properties(b.config())["auto.create.topics.enable"] for b in brokers]


def test_up_creates_topics_automatically_by_default(tmp_path: Path) -> None:
    assert _auto_create([], tmp_path) == ["true"]
    assert _auto_create(["--nodes", "3"], tmp_path) == ["true"] * 3


def test_up_flag_turns_auto_creation_off(tmp_path: Path) -> None:
    assert _auto_create(["--no-auto-create-topics"], tmp_path) == ["false"]
    assert _auto_create(["--nodes", "3", "--no-auto-create-topics"], tmp_path) == ["false"] * 3


def test_up_sasl_tells_the_users_and_a_properties_file(tmp_path: Path) -> None:
    # docs/cli.md's acls example needs a super user's credentials: `up --sasl` and
    # `status` print them (test passwords of the local broker, nothing secret)
    from kafkalite.testing.__main__ import describe_users, sasl_users

    args = build_parser().parse_args(["up", "--sasl"])
    target = build_target(args, tmp_path / "run", 19092)
    assert not isinstance(target, LocalCluster)
    state = {"listeners": {"SASL_PLAINTEXT": "127.0.0.1:19093"}, "sasl_users": sasl_users(target)}
    text = "\n".join(describe_users(state))
    assert "admin / admin-secret (super user" in text, text
    assert "alice / alice-secret" in text and "bob / bob-secret" in text, text
    assert "sasl.username=admin" in text and "bootstrap.servers=127.0.0.1:19093" in text, text
    assert "security.protocol=SASL_PLAINTEXT" in text, text
    plain = build_target(build_parser().parse_args(["up"]), tmp_path / "run2", 19094)
    assert not isinstance(plain, LocalCluster)
    assert describe_users({"sasl_users": sasl_users(plain)}) == []
