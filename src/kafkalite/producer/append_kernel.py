"""The producer's per-record append path, behind one interface: C when built, else Python.

``send()`` costs one call into :class:`Appender` in the common case: the C kernel
partitions, locks, encodes into the open batch and makes the future, or declines
(returns None) and the producer takes its general path. Without C the Appender of
:mod:`kafkalite.producer._append_py` takes the same records and hands them to
``RecordAccumulator.append``, the one Python append path. :func:`new_appender`
makes the active one. The base classes (``BatchBase``, ``QueueBase``, ``TopicBase``,
``StickyBase``, ``FutureBase``) hold the fields that call reads and writes, so the C
version touches them as struct fields instead of attribute lookups; ``FastLock`` is
the partition lock both sides take. With C, ``SendFunction`` goes one step further:
it is installed as ``producer.send`` and does the whole common case without a Python
frame, handing anything else to the ``Producer.send`` method.

The choice follows :mod:`kafkalite.protocol.record_codec` (the C append path writes
into the C ``BuilderBase``): C unless ``KAFKALITE_PURE_PYTHON=1`` or the extension is
not built. ``IMPLEMENTATION`` says which is active; ``python_impl`` and ``c_impl``
(None when not built) give both, for tests and benchmarks.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from kafkalite.producer import _append_py as python_impl
from kafkalite.protocol import record_codec

__all__ = [
    "IMPLEMENTATION",
    "Appender",
    "BatchBase",
    "CAsyncRecordFuture",
    "CRecordFuture",
    "FastLock",
    "FutureBase",
    "QueueBase",
    "SendFunction",
    "StickyBase",
    "TopicBase",
    "c_impl",
    "install_methods",
    "new_appender",
    "python_impl",
]

c_impl: ModuleType | None = record_codec.c_impl if hasattr(record_codec.c_impl, "Appender") else None

#: "c" or "python": which append path is in use (always the same as record_codec's).
IMPLEMENTATION: str = "c" if record_codec.IMPLEMENTATION == "c" and c_impl is not None else "python"

if TYPE_CHECKING:
    SendFunction: Any
    CRecordFuture: Any
    CAsyncRecordFuture: Any
    install_methods: Any
    from kafkalite.producer._append_py import (
        Appender,
        BatchBase,
        FastLock,
        FutureBase,
        QueueBase,
        StickyBase,
        TopicBase,
    )
else:
    _impl = c_impl if IMPLEMENTATION == "c" else python_impl
    Appender = _impl.Appender
    BatchBase = _impl.BatchBase
    FastLock = _impl.FastLock
    FutureBase = python_impl.FutureBase
    QueueBase = _impl.QueueBase
    StickyBase = _impl.StickyBase
    TopicBase = _impl.TopicBase
    #: ``SendFunction(appender, producer, send)``: ``producer.send`` as one C call
    #: (None without C: ``Producer.send`` calls the Python Appender itself).
    SendFunction = getattr(_impl, "SendFunction", None)
    #: With C: the future types (C, methods installed by kafkalite.producer.futures);
    #: None: futures.py makes Python classes on ``FutureBase``.
    CRecordFuture = getattr(_impl, "RecordFuture", None)
    CAsyncRecordFuture = getattr(_impl, "AsyncRecordFuture", None)
    install_methods = getattr(_impl, "install_methods", None)


class _Accumulator(Protocol):
    """What :func:`new_appender` reads of a RecordAccumulator (no import: the
    accumulator imports this module)."""

    topics: dict[str, Any]
    batch_size: int


def new_appender(acc: _Accumulator, future_cls: type, size_threshold: int,
                 impl: ModuleType | None = None) -> Appender:
    """The append path over ``acc``'s topics (``impl``: ``c_impl`` or ``python_impl``;
    default the active one). The C kernel reads the topics itself; the Python one
    appends through ``acc``."""
    if impl is None:
        impl = c_impl if IMPLEMENTATION == "c" and c_impl is not None else python_impl
    if impl is python_impl:
        return python_impl.Appender(acc, future_cls, size_threshold)
    appender: Appender = impl.Appender(acc.topics, future_cls, acc.batch_size, size_threshold)
    return appender
