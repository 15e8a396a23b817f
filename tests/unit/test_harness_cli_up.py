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
