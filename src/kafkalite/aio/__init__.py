"""asyncio clients: the same names as :mod:`kafkalite`, with ``async`` methods.

They run their engine on the caller's event loop (no extra thread).

Example::

    from kafkalite.aio import Producer

    async with Producer({"bootstrap.servers": "127.0.0.1:9092"}) as producer:
        metadata = await producer.send_and_wait("orders", value=b"hello")
        future = await producer.send("orders", value=b"more")   # appended; await it later
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "Producer": "kafkalite.producer.async_producer:AsyncProducer",
    "Consumer": "kafkalite.consumer.async_consumer:AsyncConsumer",
    "AdminClient": "kafkalite.admin.async_admin:AsyncAdminClient",
    "ShareConsumer": "kafkalite.share.async_consumer:AsyncShareConsumer",
}

if TYPE_CHECKING:
    from kafkalite.admin.async_admin import AsyncAdminClient as AdminClient
    from kafkalite.consumer.async_consumer import AsyncConsumer as Consumer
    from kafkalite.producer.async_producer import AsyncProducer as Producer
    from kafkalite.share.async_consumer import AsyncShareConsumer as ShareConsumer


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        # PEP 562: hasattr() and `from ... import` expect AttributeError here.
        raise AttributeError(f"module 'kafkalite.aio' has no attribute {name!r}")
    module, attr = target.split(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


__all__ = ["AdminClient", "Consumer", "Producer", "ShareConsumer"]
