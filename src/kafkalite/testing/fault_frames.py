"""What the network-fault proxy knows of Kafka's wire format (no sockets): frame
boundaries, which request each response answers, where the record batches of a Fetch
response lie, and byte corruption at a rate.

Corrupting "only inside record batches" keeps the framing (size prefixes, headers,
response fields) intact and flips bytes only where a record batch's CRC covers them, so
a client must notice through ``check.crcs`` (a CorruptRecordsError naming the topic,
partition and offset), not through a broken frame.

>>> splitter = FrameSplitter()
>>> splitter.feed(b"\\x00\\x00\\x00\\x02ab\\x00\\x00")
[b'\\x00\\x00\\x00\\x02ab']
"""

from __future__ import annotations

import ctypes
import math
import random
import struct
from dataclasses import dataclass
from typing import Any

from kafkalite.errors import ProtocolError

_SIZE = struct.Struct(">i")
_REQUEST_HEADER = struct.Struct(">ihhi")  # size, api_key, api_version, correlation id
_FETCH, _SHARE_FETCH = 1, 78


class FrameSplitter:
    """Cuts a byte stream into Kafka frames (4-byte size + payload)."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """Add ``data``; return the frames it completed (each with its size prefix)."""
        self._buf += data
        frames = []
        while len(self._buf) >= 4:
            (size,) = _SIZE.unpack_from(self._buf, 0)
            if size < 0 or len(self._buf) < 4 + size:
                break
            frames.append(bytes(self._buf[: 4 + size]))
            del self._buf[: 4 + size]
        return frames

    @property
    def pending(self) -> int:
        """Bytes of an incomplete frame held back."""
        return len(self._buf)


@dataclass(frozen=True)
class RequestInfo:
    api_key: int
    api_version: int


class RequestTracker:
    """Remembers, by correlation id, what each request of a connection asked."""

    def __init__(self) -> None:
        self._splitter = FrameSplitter()
        self._by_cid: dict[int, RequestInfo] = {}

    def feed(self, data: bytes) -> None:
        """Bytes the client sent (passed through unchanged by the caller)."""
        for frame in self._splitter.feed(data):
            if len(frame) >= _REQUEST_HEADER.size:
                _, api_key, version, cid = _REQUEST_HEADER.unpack_from(frame, 0)
                self._by_cid[cid] = RequestInfo(api_key, version)

    def answered(self, response_frame: bytes) -> RequestInfo | None:
        """The request a response frame answers (and forget it)."""
        if len(response_frame) < 8:
            return None
        (cid,) = _SIZE.unpack_from(response_frame, 4)
        return self._by_cid.pop(cid, None)


def _address(buf: bytearray | memoryview) -> int:
    return ctypes.addressof(ctypes.c_char.from_buffer(buf))


def record_regions(frame: bytearray, request: RequestInfo) -> list[tuple[int, int]]:
    """Byte ranges of ``frame`` (a Fetch or ShareFetch response with its size prefix)
    that record batch CRCs cover: for a v2 batch its CRC field and everything after it,
    for a legacy message its CRC and everything after it. Empty for other APIs or a
    body that does not decode."""
    from kafkalite.protocol.messages.fetch import FetchResponse
    from kafkalite.protocol.messages.share_fetch import ShareFetchResponse

    cls: Any = {_FETCH: FetchResponse, _SHARE_FETCH: ShareFetchResponse}.get(request.api_key)
    if cls is None or len(frame) < 9:
        return []
    view = memoryview(frame)
    pos = 8  # size + correlation id
    if cls.is_flexible(request.api_version):
        pos += 1 if frame[8] == 0 else 0  # response header v1: (empty) tagged fields
    try:
        response = cls.decode(view, request.api_version, pos)
    except ProtocolError:
        return []
    base = _address(frame)
    regions = []
    for topic in response.responses:
        for partition in topic.partitions:
            records = partition.records
            if records is None or len(records) == 0:
                continue
            start = _address(records) - base
            regions += _batch_regions(frame, start, start + len(records))
    return regions


def _batch_regions(buf: bytearray, pos: int, end: int) -> list[tuple[int, int]]:
    out = []
    while pos + 17 <= end:
        (length,) = _SIZE.unpack_from(buf, pos + 8)
        batch_end = pos + 12 + length
        if length < 14 or batch_end > end:
            break
        crc_at = pos + 17 if buf[pos + 16] == 2 else pos + 12  # v2 CRC after the magic; legacy before
        out.append((crc_at, batch_end))
        pos = batch_end
    return out


def corrupt(buf: bytearray, regions: list[tuple[int, int]], rate: float, rng: random.Random) -> int:
    """Flip each byte of ``regions`` with probability ``rate`` (to another value); return
    how many were changed. Skips ahead geometrically, so low rates cost little."""
    if rate <= 0:
        return 0
    changed = 0
    log_keep = math.log1p(-rate) if rate < 1 else None
    for start, end in regions:
        pos = start
        while True:
            if log_keep is not None:
                pos += int(math.log(1.0 - rng.random()) / log_keep)
            if pos >= end:
                break
            buf[pos] ^= rng.randrange(1, 256)
            changed += 1
            pos += 1
    return changed
