"""The network-fault proxy's view of the wire, without sockets: frames, which request a
response answers, where a Fetch response's record batches lie, corruption at a rate."""

from __future__ import annotations

import random
import struct

from kafkalite.net.connection import ConnectionState
from kafkalite.protocol.messages.fetch import (
    FetchRequest,
    FetchResponse,
    FetchResponseFetchableTopicResponse,
    FetchResponsePartitionData,
)
from kafkalite.protocol.records import RecordBatchBuilder, iter_batches
from kafkalite.testing.fault_frames import (
    FrameSplitter,
    RequestInfo,
    RequestTracker,
    corrupt,
    record_regions,
)


def _batch(n: int) -> bytes:
    b = RecordBatchBuilder()
    for i in range(n):
        b.append(1000 + i, b"k%d" % i, b"value-%d" % i, None)
    return b.build()


def _fetch_frame(cid: int, version: int, records: list[bytes]) -> bytes:
    body = FetchResponse(responses=[FetchResponseFetchableTopicResponse(topic="t", partitions=[
        FetchResponsePartitionData(partition_index=i, records=r) for i, r in enumerate(records)])]).encode(version)
    header = struct.pack(">i", cid) + (b"\x00" if FetchResponse.is_flexible(version) else b"")
    return struct.pack(">i", len(header) + len(body)) + header + body


def test_frames_are_cut_whatever_the_chunking() -> None:
    frames = [struct.pack(">i", n) + bytes(i % 256 for i in range(n)) for n in (0, 3, 300)]
    stream = b"".join(frames)
    for step in (1, 2, 7, len(stream)):
        splitter = FrameSplitter()
        out = []
        for i in range(0, len(stream), step):
            out += splitter.feed(stream[i:i + step])
        assert out == frames and splitter.pending == 0


def test_responses_are_matched_to_their_requests() -> None:
    conn = ConnectionState("c")
    tracker = RequestTracker()
    _, frame = conn.build_request(FetchRequest(), 12)
    tracker.feed(bytes(frame[:5]))
    tracker.feed(bytes(frame[5:]))
    response = _fetch_frame(0, 12, [])
    assert tracker.answered(response) == RequestInfo(1, 12)
    assert tracker.answered(response) is None  # answered once


def test_only_crc_covered_record_bytes_are_corrupted_and_the_crc_catches_them() -> None:
    batches = [_batch(5) + _batch(3), _batch(7)]
    sizes = [len(_batch(5)), len(_batch(3)), len(_batch(7))]
    for version in (4, 12, 16):
        frame = bytearray(_fetch_frame(3, version, batches))
        original = bytes(frame)
        regions = record_regions(frame, RequestInfo(1, version))
        # One region per batch: its CRC field and everything the CRC covers.
        assert [end - start for start, end in regions] == [n - 17 for n in sizes]
        changed = corrupt(frame, regions, 0.05, random.Random(version))
        diff = [i for i in range(len(frame)) if frame[i] != original[i]]
        assert changed == len(diff) > 0
        assert all(any(s <= i < e for s, e in regions) for i in diff)
        # The framing survives (the response decodes); exactly the touched batches fail their CRC.
        response = FetchResponse.decode(memoryview(frame), version, 8 + (1 if version >= 12 else 0))
        decoded = [b for p in response.responses[0].partitions for b in iter_batches(p.records, check_crcs=False)]
        assert len(decoded) == 3
        for batch, (start, end) in zip(decoded, regions):
            touched = any(start <= i < end for i in diff)
            assert batch.is_valid() is not touched


def test_other_apis_and_garbage_give_no_regions() -> None:
    frame = bytearray(_fetch_frame(1, 12, [_batch(2)]))
    assert record_regions(frame, RequestInfo(3, 12)) == []  # a Metadata response: nothing
    assert record_regions(bytearray(b"\x00\x00\x00\x05\x00\x00\x00\x01\xff"), RequestInfo(1, 12)) == []


def test_corruption_rate_is_about_right() -> None:
    buf = bytearray(200_000)
    changed = corrupt(buf, [(0, len(buf))], 0.01, random.Random(5))
    assert 1600 < changed < 2400 and sum(1 for b in buf if b) == changed
    assert corrupt(bytearray(100), [(0, 100)], 0.0, random.Random(5)) == 0
    every = bytearray(50)
    assert corrupt(every, [(10, 20)], 1.0, random.Random(5)) == 10 and all(every[10:20]) and not any(every[:10])
