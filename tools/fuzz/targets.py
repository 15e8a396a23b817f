"""What the fuzzer feeds: every decoder that reads bytes a broker (or another group
member) sent.

* ``msg:<Name>:v<N>``: every generated response (and ``data``) decoder at every version
  (``Message.decode``), seeded with sampled valid encodings.
* ``records:<impl>``: a fetch's record data through ``iter_batches`` + ``records()`` +
  ``columns()`` (v2 of every codec, control batches, legacy v0/v1 with compressed
  wrappers), with the C kernels (``c``) and the pure-Python ones (``py``); CRC checks
  on or off.
* ``records-inner:<impl>``: structured: the *uncompressed* records section of a v2 batch
  is mutated, then re-compressed with the batch's codec and given a correct length and
  CRC, so record-level parsing is reached behind compression and CRC checks.
* ``fetch:<impl>``: the consumer's own path, ``CompletedFetch.take`` (read_committed
  filtering with a mutated aborted-transactions list, control batches, positions), or
  now and then its columnar path (``take_batches`` + ``columns()``, as Spark reads).
* ``share:<impl>``: the share consumer's path, ``ShareCompletedFetch.take`` over random
  acquired ranges (GAP and REJECT acknowledgements, corrupt batches, CRC checks on or off).
* ``frames``: the connection's framing (``ConnectionState.feed``/``received``): size
  prefix, correlation ids, response header tags, then the body decoder.

A target's ``make_input(rng)`` builds one input from its seeds; ``run(data, rng)``
decodes it and returns what was decoded (kept alive until memory is measured).
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from crc32c import crc32c

from kafkalite.errors import ProtocolError
from kafkalite.protocol import compression, record_codec, records
from tools.fuzz import seeds as S
from tools.fuzz.mutate import mutate

#: Decompressed output cap used by the record targets (the consumer's is 256 MiB; a
#: small one keeps the fuzzer's memory figures about the decoders, not the cap).
MAX_DECOMPRESSED = 1 << 20
#: Largest frame the ``frames`` target's connection accepts.
MAX_FRAME = 1 << 20


@dataclass
class Target:
    name: str
    family: str
    make_seeds: Callable[[], list[bytes]]
    run: Callable[[bytes, random.Random], Any]
    structured: Callable[[random.Random, Sequence[bytes]], bytes] | None = None
    #: Fixed bytes a run may allocate whatever the input (e.g. a connection's receive buffer).
    overhead: int = 0
    _seeds: list[bytes] | None = field(default=None, repr=False)

    @property
    def seeds(self) -> list[bytes]:
        if self._seeds is None:
            self._seeds = self.make_seeds()
        return self._seeds

    def make_input(self, rng: random.Random) -> bytes:
        """One input: a valid seed now and then (it must decode), else a mutated one."""
        seeds = self.seeds
        if rng.random() < 0.03:
            return rng.choice(seeds)
        if self.structured is not None and rng.random() < 0.6:
            return self.structured(rng, seeds)
        return mutate(rng.choice(seeds), rng, seeds)


# ---------------------------------------------------------------- kernels


def _impls() -> dict[str, Any]:
    impls = {"py": record_codec.python_impl}
    if record_codec.c_impl is not None:
        impls["c"] = record_codec.c_impl
    return impls


def use_impl(impl: Any) -> None:
    """Point the record decoder at ``impl`` (C or pure Python): every reader (the
    consumer's, the share consumer's, the columnar one) decodes through
    :mod:`kafkalite.protocol.records`."""
    records.decode_records = impl.decode_records
    records.decode_records_columnar = impl.decode_records_columnar


# ---------------------------------------------------------------- record targets


def _decode_record_data(data: bytes, impl: Any, check_crcs: bool) -> list[Any]:
    use_impl(impl)
    out: list[Any] = []
    for batch in records.iter_batches(data, check_crcs=check_crcs):
        out.append((batch.base_offset, batch.last_offset, batch.record_count, batch.compression,
                    batch.timestamp_type, batch.producer_id, batch.max_timestamp, batch.is_control,
                    batch.size_in_bytes))
        try:
            out.append(batch.records("t", 0, max_decompressed_size=MAX_DECOMPRESSED))
        except ProtocolError:
            pass
        if hasattr(batch, "columns"):
            try:
                out.append(batch.columns(max_decompressed_size=MAX_DECOMPRESSED))
            except ProtocolError:
                pass
    return out


def _records_run(impl: Any) -> Callable[[bytes, random.Random], Any]:
    def run(data: bytes, rng: random.Random) -> Any:
        return _decode_record_data(data, impl, rng.random() < 0.5)
    return run


def rebuild_batch(header: bytes, body: bytes, codec: int, count: int | None = None) -> bytes:
    """A v2 batch with ``body`` as its records section (compressed with ``codec``),
    length, count and CRC made consistent: what a well-behaved broker would send."""
    payload = compression.compress(codec, body) if codec else body
    head = bytearray(header)
    struct.pack_into(">i", head, 8, 61 - 12 + len(payload))
    if count is not None:
        struct.pack_into(">i", head, 57, count)
    batch = head + payload
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return bytes(batch)


def _inner_structured(rng: random.Random, _seeds: Sequence[bytes]) -> bytes:
    batch = rng.choice(S.v2_batches())
    header, body, codec = S.records_section(batch)
    body = mutate(body, rng, [body])
    count = None
    if rng.random() < 0.3:
        count = rng.choice((0, 1, 2, 7, 100, 0x7FFFFFFF, -1))
    return rebuild_batch(header, body, codec, count)


def _compressed_structured(rng: random.Random, _seeds: Sequence[bytes]) -> bytes:
    """Mutate the compressed bytes themselves, CRC fixed: the decompressors' turn."""
    batch = rng.choice([b for b in S.v2_batches() if b[22] & 0x07])
    header, payload = batch[:61], batch[61:]
    payload = mutate(payload, rng, [payload])
    head = bytearray(header)
    struct.pack_into(">i", head, 8, 61 - 12 + len(payload))
    out = head + payload
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def _inner_seeds() -> list[bytes]:
    return list(S.v2_batches())


def _inner_run(impl: Any) -> Callable[[bytes, random.Random], Any]:
    def run(data: bytes, rng: random.Random) -> Any:
        return _decode_record_data(data, impl, True)
    return run


def _fetch_run(impl: Any) -> Callable[[bytes, random.Random], Any]:
    from kafkalite.consumer.fetch_buffer import CompletedFetch
    from kafkalite.types import TopicPartition

    tp = TopicPartition("t", 0)

    def run(data: bytes, rng: random.Random) -> Any:
        use_impl(impl)
        aborted = [(rng.choice((7, 1, -1)), rng.choice((0, 5, 9, 12, -1))) for _ in range(rng.randrange(3))]
        fetch = CompletedFetch(tp, 1, rng.choice((0, 0, 5, 12)), memoryview(data),
                               aborted=aborted, read_committed=rng.random() < 0.5,
                               check_crcs=rng.random() < 0.5)
        out: list[Any] = []
        if rng.random() < 0.2:
            batches: list[Any] = []
            try:
                fetch.take_batches(batches)
                out += [b.columns(max_decompressed_size=MAX_DECOMPRESSED) for b in batches]
            except ProtocolError:
                pass
            return out
        for _ in range(100_000):
            try:
                if not fetch.take(rng.choice((1, 3, 500)), out):
                    break
            except ProtocolError:
                break  # a corrupt batch: raised once no records precede it
        return out
    return run


def _share_run(impl: Any) -> Callable[[bytes, random.Random], Any]:
    from kafkalite.share.completed_fetch import ShareCompletedFetch
    from kafkalite.types import TopicPartition

    tp = TopicPartition("t", 0)

    def run(data: bytes, rng: random.Random) -> Any:
        use_impl(impl)
        ranges = []
        for _ in range(rng.randrange(1, 4)):
            first = rng.choice((0, 0, 1, 5, 12, 40))
            ranges.append((first, first + rng.choice((0, 3, 20, 200)), rng.randrange(1, 6)))
        fetch = ShareCompletedFetch(tp, 1, memoryview(data), ranges, check_crcs=rng.random() < 0.5)
        out: list[Any] = []
        acks: list[Any] = []
        for _ in range(100_000):
            try:
                if not fetch.take(rng.choice((1, 3, 500)), out, lambda offset, kind: acks.append((offset, kind))):
                    break
            except ProtocolError:
                continue  # a corrupt batch: its records rejected, the next take() goes on
        return out, acks
    return run


# ---------------------------------------------------------------- frames


@cache
def _frame_apis() -> list[tuple[Any, Any, int]]:
    """(request class, response class, version) the frames target answers."""
    from kafkalite.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
    from kafkalite.protocol.messages.fetch import FetchRequest, FetchResponse
    from kafkalite.protocol.messages.metadata import MetadataRequest, MetadataResponse
    from kafkalite.protocol.messages.produce import ProduceRequest, ProduceResponse

    return [(ApiVersionsRequest, ApiVersionsResponse, 3), (MetadataRequest, MetadataResponse, 12),
            (FetchRequest, FetchResponse, 16), (ProduceRequest, ProduceResponse, 9),
            (MetadataRequest, MetadataResponse, 4)]


def _frame_seeds() -> list[bytes]:
    """Streams of three response frames (correlation ids 0, 1, 2) for the same API."""
    out = []
    for request_cls, response_cls, version in _frame_apis():
        spec = next(s for s in S.specs() if s.name == response_cls.__name__)
        bodies = S.message_seeds(spec, version)
        flexible = response_cls.is_flexible(version) and request_cls.API_KEY != 18
        stream = bytearray()
        for cid in range(3):
            frame = struct.pack(">i", cid) + (b"\x00" if flexible else b"") + bodies[(cid + 1) % len(bodies)]
            stream += struct.pack(">i", len(frame)) + frame
        out.append(bytes(stream))
    return out


def _frames_run(data: bytes, rng: random.Random) -> Any:
    from kafkalite.net.connection import ConnectionState

    api = _frame_apis()
    # The stream's API is recognisable from its seed only by trying; pick one at random
    # (a mismatch is just another malformed body).
    request_cls, _, version = api[rng.randrange(len(api))]
    state = ConnectionState("fuzz", MAX_FRAME)
    for _ in range(3):
        state.build_request(request_cls(), version)
    done: list[Any] = []
    pos = 0
    try:
        while pos < len(data):
            if rng.random() < 0.5:
                step = min(len(data) - pos, rng.choice((1, 3, 64, 1 << 16)))
                done += state.feed(data[pos:pos + step])
            else:
                buf = state.recv_buffer()
                step = min(len(buf), len(data) - pos)
                buf[:step] = data[pos:pos + step]
                done += state.received(step)
            pos += step
    except ProtocolError:
        pass
    for _pending, result in done:
        if isinstance(result, BaseException) and not isinstance(result, ProtocolError):
            raise result
    return done


# ---------------------------------------------------------------- the list


def _message_run(cls: Any, version: int) -> Callable[[bytes, random.Random], Any]:
    def run(data: bytes, rng: random.Random) -> Any:
        return cls.decode(data, version)
    return run


@cache
def all_targets() -> list[Target]:
    targets: list[Target] = []
    for spec in S.specs():
        cls, _ = S.message_class(spec)
        for version in spec.versions():
            targets.append(Target(
                f"msg:{spec.name}:v{version}", "messages",
                (lambda s=spec, v=version: S.message_seeds(s, v)), _message_run(cls, version)))
    for name, impl in _impls().items():
        targets.append(Target(f"records:{name}", "records", S.record_seeds, _records_run(impl)))
        targets.append(Target(f"records-inner:{name}", "records", _inner_seeds, _inner_run(impl),
                              structured=_inner_structured))
        targets.append(Target(f"records-compressed:{name}", "records", _inner_seeds, _inner_run(impl),
                              structured=_compressed_structured))
        targets.append(Target(f"fetch:{name}", "records", S.record_seeds, _fetch_run(impl)))
        targets.append(Target(f"share:{name}", "records", S.record_seeds, _share_run(impl)))
    # A connection allocates its 256 KiB receive scratch buffer once, whatever it reads,
    # and a frame's buffer starts at 256 KiB (or its size) before bytes arrive.
    targets.append(Target("frames", "frames", _frame_seeds, _frames_run, overhead=512 * 1024))
    return targets


#: Share of the inputs each family gets: the record decoders are few targets but the
#: hottest and most intricate code (C kernels), the messages are many but regular.
FAMILY_WEIGHTS = {"messages": 0.5, "records": 0.4, "frames": 0.1}
