"""The producer's per-record append path, behind one interface: C when built, else Python.

``send()`` costs one call into :class:`Appender` in the common case (see
:mod:`kafkalite.producer._append_py`, the reference, for what it does and when it
declines). The base classes (``BatchBase``, ``QueueBase``, ``TopicBase``,
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
from typing import TYPE_CHECKING

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
    "python_impl",
]

c_impl: ModuleType | None = record_codec.c_impl if hasattr(record_codec.c_impl, "Appender") else None

#: "c" or "python": which append path is in use (always the same as record_codec's).
IMPLEMENTATION: str = "c" if record_codec.IMPLEMENTATION == "c" and c_impl is not None else "python"

if TYPE_CHECKING:
    from typing import Any

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
