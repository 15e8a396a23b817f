"""The per-record kernels, behind one interface: C when available, else pure Python.

Everything that runs once per record on the producer or consumer path lives here:

* ``encode_record_into(buf, offset_delta, timestamp_delta, key, value, headers) -> int``
  appends one v2 record to a bytearray and returns the bytes written;
* ``record_size(offset_delta, timestamp_delta, key, value, headers) -> int``;
* ``decode_records(buf, start, end, count, base_offset, base_timestamp,
  log_append_time=None, record_type=tuple, extra=()) -> list`` builds one tuple (or
  tuple-subclass instance, e.g. :class:`~kafkalite.protocol.record_types.Record`) per
  record: ``(offset, timestamp, key, value, headers, *extra)``;
* ``decode_records_columnar(buf, start, end, count, base_offset, base_timestamp,
  log_append_time=None) -> tuple of 11 arrays`` with no per-record Python object (for
  Arrow/Spark);
* ``murmur2(data) -> int`` (Kafka's partitioner hash, signed 32-bit);
* ``encode_varint``/``encode_varlong``/``decode_varint``/``decode_varlong``;
* ``BuilderBase``: a record batch's buffer with ``try_append``/``append`` (the base
  class of :class:`~kafkalite.protocol.record_builder.RecordBatchBuilder`; the
  producer's append path, :mod:`kafkalite.producer.append_kernel`, writes into it).

:mod:`kafkalite._speedups` (C) is used when it imports, unless the environment sets
``KAFKALITE_PURE_PYTHON=1``. ``IMPLEMENTATION`` says which one is active;
``python_impl`` and ``c_impl`` (None when not built) give both, for tests and
benchmarks. Callers import the functions from here and never from either module.

Without the C kernels (no wheel for the platform and no compiler at install time) the
package says so once, at INFO on the ``kafkalite`` logger: the speed lost and how to get
them (:func:`missing_kernels_notice`).
"""

from __future__ import annotations

import importlib
import logging
import os
from types import ModuleType
from typing import TYPE_CHECKING

from kafkalite.protocol import _record_codec_py as python_impl

__all__ = [
    "IMPLEMENTATION",
    "BuilderBase",
    "c_impl",
    "c_import_error",
    "decode_records",
    "decode_records_columnar",
    "decode_varint",
    "decode_varlong",
    "encode_record_into",
    "encode_varint",
    "encode_varlong",
    "missing_kernels_notice",
    "murmur2",
    "python_impl",
    "record_size",
]

#: What the missing C kernels cost: messages per second, pure Python against C, one run
#: each on one Linux x86-64 machine against the same broker (issue 24).
PURE_PYTHON_COST = "produce ~387k msg/s instead of ~2.13M, consume ~560k instead of ~2.85M"

c_impl: ModuleType | None
#: Why ``kafkalite._speedups`` did not import ("" when it did).
c_import_error: str = ""
try:
    c_impl = importlib.import_module("kafkalite._speedups")
except ImportError as exc:  # no compiler at install time: the pure-Python path is complete
    c_impl = None
    c_import_error = str(exc)

_impl: ModuleType = python_impl
if c_impl is not None and os.environ.get("KAFKALITE_PURE_PYTHON", "") not in ("1", "true", "yes"):
    _impl = c_impl

#: "c" or "python": which kernels are in use.
IMPLEMENTATION: str = "c" if _impl is c_impl else "python"


def missing_kernels_notice(reason: str) -> str:
    """What a user without the C kernels is told: the speed lost and how to get them."""
    return (
        f"kafkalite's C kernels (kafkalite._speedups) are not installed ({reason}): records "
        f"are encoded and decoded in pure Python, about 5x slower ({PURE_PYTHON_COST}). "
        "To get them, install a kafkalite wheel for this platform and Python "
        "(`pip install --only-binary kafkalite kafkalite`), or install a C compiler "
        "(and the Python headers) and reinstall from source "
        "(`pip install --force-reinstall --no-binary kafkalite kafkalite`)."
    )


# Said once per process (this module is imported once), at INFO: a working client that
# is slower than it could be is not a warning, but nothing else would tell the user.
# Choosing the pure-Python kernels (KAFKALITE_PURE_PYTHON=1) is not news: no notice.
if c_impl is None:
    logging.getLogger("kafkalite").info("%s", missing_kernels_notice(c_import_error))

if TYPE_CHECKING:
    # The C kernels take and return what the Python reference does (the tests run both
    # on the same inputs): its signatures are the types of either.
    from kafkalite.protocol._record_codec_py import (
        BuilderBase,
        decode_records,
        decode_records_columnar,
        decode_varint,
        decode_varlong,
        encode_record_into,
        encode_varint,
        encode_varlong,
        murmur2,
        record_size,
    )
else:
    encode_record_into = _impl.encode_record_into
    record_size = _impl.record_size
    decode_records = _impl.decode_records
    decode_records_columnar = _impl.decode_records_columnar
    murmur2 = _impl.murmur2
    encode_varint = _impl.encode_varint
    encode_varlong = _impl.encode_varlong
    decode_varint = _impl.decode_varint
    decode_varlong = _impl.decode_varlong
    BuilderBase = _impl.BuilderBase
