"""The generated protocol: fresh from the specs, and every message round-trips at every version.

Sample values are built from the JSON specs (through the generator's own spec model), so
every field of every version is exercised: present fields get non-default values,
absent ones stay at their defaults, nullable ones are tried as null too.
"""

from __future__ import annotations

import importlib
import random
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from kafkalite.errors import ProtocolError, UnsupportedVersionForClientError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import generate as gen  # noqa: E402

SPECS = [gen.load_spec(p) for p in sorted(gen.SPEC_DIR.glob("*.json"))]
CASES = [(s, v) for s in SPECS for v in s.versions()]

_INT_RANGES = {"int8": 7, "int16": 15, "uint16": 16, "int32": 31, "uint32": 32, "int64": 63}


def test_generated_files_are_fresh() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "generate.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _module_for(spec: gen.MessageSpec) -> Any:
    return importlib.import_module(f"kafkalite.protocol.messages.{gen.module_name(spec)}")


def _sample_scalar(t: str, rng: random.Random, nullable: bool) -> Any:
    if nullable and rng.random() < 0.25:
        return None
    if t in _INT_RANGES:
        bits = _INT_RANGES[t]
        if t.startswith("u"):
            return rng.randrange(0, 1 << bits)
        return rng.randrange(-(1 << bits), 1 << bits)
    if t == "float64":
        return rng.choice([0.5, -1.25, 1e300])
    if t == "bool":
        return True
    if t == "string":
        return rng.choice(["", "a", "topic-ü", "x" * 300])
    if t in ("bytes", "records"):
        return bytes(rng.randrange(256) for _ in range(rng.choice([0, 3, 200])))
    if t == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    raise AssertionError(t)


def _sample(module: Any, fields: list[gen.Field], cls_name: str, version: int, flexible: bool,
            rng: random.Random, depth: int = 0) -> Any:
    cls = getattr(module, cls_name)
    obj = cls()
    for f in fields:
        if version not in f.versions:
            continue
        nullable = version in f.nullable
        if f.is_array:
            if nullable and rng.random() < 0.2:
                value: Any = None
            else:
                n = rng.choice([0, 1, 2]) if depth < 3 else 0
                if f.struct is not None:
                    value = [_sample(module, f.struct.fields, f.struct.cls, version, flexible, rng, depth + 1)
                             for _ in range(n)]
                else:
                    value = [_sample_scalar(f.elem, rng, False) for _ in range(n)]
        elif f.struct is not None:
            if nullable and rng.random() < 0.3:
                value = None
            else:
                value = _sample(module, f.struct.fields, f.struct.cls, version, flexible, rng, depth + 1)
        else:
            value = _sample_scalar(f.type, rng, nullable)
        setattr(obj, f.attr, value)
    return obj


@pytest.mark.parametrize("spec,version", CASES, ids=[f"{s.name}-v{v}" for s, v in CASES])
def test_round_trip_every_version(spec: gen.MessageSpec, version: int) -> None:
    module = _module_for(spec)
    cls = getattr(module, spec.name)
    for seed in range(4):
        rng = random.Random(hash((spec.name, version, seed)) & 0xFFFFFFFF)
        obj = _sample(module, spec.fields, spec.name, version, version in spec.flexible, rng)
        data = obj.encode(version)
        back = cls.decode(data, version)
        assert back == obj, f"{spec.name} v{version} seed {seed}"
        assert back.encode(version) == data
        # A cut anywhere must give a typed error, never another exception or a hang.
        if data:
            for cut in {0, len(data) // 2, len(data) - 1}:
                with pytest.raises(ProtocolError):
                    cls.decode(data[:cut], version)


def test_default_instance_encodes_at_every_version() -> None:
    for spec, version in CASES:
        cls = getattr(_module_for(spec), spec.name)
        data = cls().encode(version)
        assert cls.decode(data, version) == cls()


def test_field_absent_in_version_is_refused() -> None:
    from kafkalite.protocol.messages.join_group import JoinGroupRequest
    from kafkalite.protocol.messages.produce import ProduceRequest, ProduceRequestTopicProduceData

    # Static membership (group_instance_id, v5+) would silently be lost at v4: refuse.
    req = JoinGroupRequest(group_id="g", group_instance_id="i-1")
    req.encode(5)
    with pytest.raises(UnsupportedVersionForClientError, match="group_instance_id"):
        req.encode(4)
    # Ignorable fields (Produce's topic_id before v13) are dropped, as the spec allows.
    ProduceRequest(topic_data=[ProduceRequestTopicProduceData(topic_id=uuid.uuid4())]).encode(12)


def test_unknown_version_is_a_typed_error() -> None:
    from kafkalite.protocol.messages.api_versions import ApiVersionsRequest

    with pytest.raises(UnsupportedVersionForClientError):
        ApiVersionsRequest().encode(99)


def test_huge_array_count_does_not_allocate() -> None:
    from kafkalite.protocol.messages.metadata import MetadataResponse

    # throttle_time_ms, then a brokers array claiming 2**31-1 entries in 8 bytes.
    data = b"\x00\x00\x00\x00" + b"\x7f\xff\xff\xff" + b"\x00" * 8
    with pytest.raises(ProtocolError, match="claims"):
        MetadataResponse.decode(data, 3)


def test_a_null_element_of_a_string_array_is_refused() -> None:
    from kafkalite.protocol.messages.describe_groups import DescribeGroupsRequest

    # Array elements are never null (Java's readers refuse one too): groups = ["a", null].
    good = DescribeGroupsRequest(groups=["a", "b"]).encode(0)
    assert good == b"\x00\x00\x00\x02\x00\x01a\x00\x01b"
    assert DescribeGroupsRequest.decode(good, 0).groups == ["a", "b"]
    with pytest.raises(ProtocolError, match="null string at byte 7"):
        DescribeGroupsRequest.decode(b"\x00\x00\x00\x02\x00\x01a\xff\xff", 0)


def test_known_bytes_api_versions_request_v3() -> None:
    from kafkalite.protocol.messages.api_versions import ApiVersionsRequest

    # Compact strings (length + 1) then an empty tagged-field section.
    data = ApiVersionsRequest(client_software_name="kl", client_software_version="1").encode(3)
    assert data == b"\x03kl\x021\x00"


def test_tagged_fields_round_trip_and_unknown_tags_kept() -> None:
    from kafkalite.protocol.messages.fetch import FetchRequest

    req = FetchRequest(cluster_id="c1", replica_state=None)
    data = req.encode(15)
    assert FetchRequest.decode(data, 15).cluster_id == "c1"
    # An unknown tag (99) appended by a newer peer is skipped and kept raw.
    body = bytearray(FetchRequest().encode(12))
    assert body[-1] == 0
    body[-1:] = b"\x01\x63\x02hi"
    decoded = FetchRequest.decode(bytes(body), 12)
    assert decoded.unknown_tagged_fields == {99: b"hi"}


@pytest.mark.parametrize("compact", [True, False])
@pytest.mark.parametrize("n", [0, 1, 8, 9, 200])
def test_fixed_width_arrays_read_in_one_call(compact: bool, n: int) -> None:
    from kafkalite.protocol.primitives import INT32, read_fixed_array, write_uvarint

    values = [random.randint(-2**31, 2**31 - 1) for _ in range(n)]
    out = bytearray(b"\x07")  # a byte before, so positions are not 0
    if compact:
        write_uvarint(out, n + 1)  # 200 items: a two-byte varint
    else:
        out += INT32.pack(n)
    for v in values:
        out += INT32.pack(v)
    out += b"\x09"
    got, pos = read_fixed_array(memoryview(bytes(out)), 1, "i", 4, compact)
    assert got == values and out[pos] == 9
    with pytest.raises(ProtocolError, match=f"claims {n + 1} items"):
        # one item more than the bytes hold (the trailing byte is not a whole int32)
        bad = bytearray(b"\x07")
        if compact:
            write_uvarint(bad, n + 2)
        else:
            bad += INT32.pack(n + 1)
        read_fixed_array(bytes(bad + out[len(bad):]), 1, "i", 4, compact)


@pytest.mark.parametrize("compact, null", [(True, b"\x00"), (False, b"\xff\xff\xff\xff")])
def test_a_null_fixed_width_array(compact: bool, null: bytes) -> None:
    from kafkalite.protocol.primitives import read_fixed_array

    assert read_fixed_array(null, 0, "q", 8, compact) == (None, len(null))
    with pytest.raises(ProtocolError, match="truncated array length"):
        read_fixed_array(b"", 0, "q", 8, compact)
