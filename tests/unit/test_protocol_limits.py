"""Kafka 4.4's limits on one message: at most 1,000,000 array items and 10,000 tagged
fields. The decoders refuse more with ProtocolLimitError before allocating anything."""

from __future__ import annotations

import struct

import pytest

from kafkalite.errors import ProtocolError, ProtocolLimitError
from kafkalite.protocol import primitives as p
from kafkalite.protocol.messages.metadata import MetadataResponse


def uvarint(n: int) -> bytes:
    out = bytearray()
    p.write_uvarint(out, n)
    return bytes(out)


def test_an_array_of_more_than_a_million_items_is_refused_in_every_form() -> None:
    big = p.MAX_ARRAY_ITEMS + 1
    body = b"\x00" * (4 * big)  # even with the bytes for it present
    with pytest.raises(ProtocolLimitError, match="claims 1000001 items, more than the 1,000,000 Kafka allows"):
        p.read_array_length(struct.pack(">i", big) + body, 0)
    with pytest.raises(ProtocolLimitError):
        p.read_compact_array_length(uvarint(big + 1) + body, 0)
    with pytest.raises(ProtocolLimitError):
        p.read_fixed_array(struct.pack(">i", big) + body, 0, "i", 4, False)
    assert issubclass(ProtocolLimitError, ProtocolError)


def test_a_million_items_are_still_read() -> None:
    n = p.MAX_ARRAY_ITEMS
    items, end = p.read_fixed_array(uvarint(n + 1) + b"\x00" * (4 * n), 0, "i", 4, True)
    assert items is not None and len(items) == n and end == len(uvarint(n + 1)) + 4 * n


def test_more_than_ten_thousand_tagged_fields_are_refused() -> None:
    section = uvarint(p.MAX_TAGGED_FIELDS + 1) + b"\x00\x00" * (p.MAX_TAGGED_FIELDS + 1)
    with pytest.raises(ProtocolLimitError, match="claims 10001 fields, more than the 10,000"):
        p.skip_tagged_fields(section, 0)
    fields, _ = p.skip_tagged_fields(uvarint(2) + b"\x00\x00\x01\x00", 0)
    assert fields == {0: b"", 1: b""}


def test_a_generated_decoder_refuses_an_oversized_answer() -> None:
    # Metadata v12 (flexible): throttle time, then a compact array of brokers claiming 2,000,000.
    data = struct.pack(">i", 0) + uvarint(2_000_001) + b"\x00" * 64
    with pytest.raises(ProtocolLimitError):
        MetadataResponse.decode(data, 12)
