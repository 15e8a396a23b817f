"""Micro-benchmark of the record hot paths: pure-Python kernels vs the C extension.

Measures records/s for
* encode: ``RecordBatchBuilder.try_append`` of 100-byte values with 10-byte keys into
  16 KiB batches (Java's batch.size default), including ``build()`` (CRC, compression);
* decode: ``iter_batches`` (CRC checked) + ``records()`` over ~1 MiB of batches, as
  a consumer does with a fetch response, and ``columns()`` (the Spark path);
* murmur2 of 10-byte keys (the partitioner).

Run: ``python benchmarks/micro_records.py [--seconds 1.0]``. Each case runs for about
that long and reports the best of 3 rounds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

from kafkalite.protocol import record_builder, records
from kafkalite.protocol.record_codec import c_impl, python_impl
from kafkalite.protocol.records import iter_batches

VALUE = os.urandom(50) * 2  # 100 bytes, half-compressible like typical payloads
KEYS = [b"key-%06d" % i for i in range(1000)]
HEADERS = [("trace-id", b"0123456789abcdef")]


RecordBatchBuilder = record_builder.RecordBatchBuilder


def use(impl) -> None:
    global RecordBatchBuilder
    records.decode_records = impl.decode_records
    records.decode_records_columnar = impl.decode_records_columnar
    RecordBatchBuilder = record_builder.builder_class(impl.BuilderBase)


def rate(fn: Callable[[], int], seconds: float) -> float:
    best = 0.0
    for _ in range(3):
        n = 0
        start = time.perf_counter()
        while True:
            n += fn()
            elapsed = time.perf_counter() - start
            if elapsed >= seconds / 3:
                break
        best = max(best, n / elapsed)
    return best


def encode(codec: int, headers: bool) -> Callable[[], int]:
    hdrs = HEADERS if headers else None

    def run() -> int:
        count = 0
        ts = 1_700_000_000_000
        for _ in range(10):
            b = RecordBatchBuilder(compression=codec)
            i = 0
            while b.try_append(ts + (i >> 4), KEYS[i % 1000], VALUE, hdrs) >= 0:
                i += 1
            b.build()
            count += i
        return count

    return run


def fetch_buffer(codec: int, headers: bool) -> bytes:
    parts = []
    size = 0
    while size < 1 << 20:
        b = RecordBatchBuilder(compression=codec)
        i = 0
        while b.try_append(1_700_000_000_000 + i, KEYS[i % 1000], VALUE, HEADERS if headers else None) >= 0:
            i += 1
        parts.append(b.build())
        size += len(parts[-1])
    return b"".join(parts)


def decode(data: bytes) -> Callable[[], int]:
    def run() -> int:
        n = 0
        for batch in iter_batches(data):
            n += len(batch.records("topic", 0))
        return n

    return run


def decode_columns(data: bytes) -> Callable[[], int]:
    def run() -> int:
        n = 0
        for batch in iter_batches(data):
            n += len(batch.columns().offsets)
        return n

    return run


def murmur(impl) -> Callable[[], int]:
    def run() -> int:
        m = impl.murmur2
        for k in KEYS:
            m(k)
        return len(KEYS)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.5)
    args = parser.parse_args()
    impls = [("python", python_impl)] + ([("c", c_impl)] if c_impl is not None else [])
    if c_impl is None:
        print("kafkalite._speedups is not built; only the pure-Python kernels are measured", file=sys.stderr)
    cases: list[tuple[str, Callable[[object], Callable[[], int]]]] = []
    for codec, name in ((0, "none"), (3, "lz4")):
        cases.append((f"encode 100B values, {name}", lambda _i, c=codec: encode(c, False)))
        cases.append((f"encode 100B values + 1 header, {name}", lambda _i, c=codec: encode(c, True)))
        bufs = {h: fetch_buffer(codec, h) for h in (False, True)}
        cases.append((f"decode records(), {name}", lambda _i, d=bufs[False]: decode(d)))
        cases.append((f"decode records() + 1 header, {name}", lambda _i, d=bufs[True]: decode(d)))
        cases.append((f"decode columns(), {name}", lambda _i, d=bufs[False]: decode_columns(d)))
    cases.append(("murmur2 10-byte keys", lambda i: murmur(i)))
    print(f"{'case':42s}" + "".join(f"{n + ' rec/s':>16s}" for n, _ in impls) + ("     C/Py" if len(impls) == 2 else ""))
    for label, make in cases:
        rates = []
        for _name, impl in impls:
            use(impl)
            rates.append(rate(make(impl), args.seconds))
        line = f"{label:42s}" + "".join(f"{r:16,.0f}" for r in rates)
        if len(rates) == 2:
            line += f"{rates[1] / rates[0]:8.1f}x"
        print(line, flush=True)


if __name__ == "__main__":
    main()
