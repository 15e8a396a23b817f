"""kafkalite: a complete, fast, typed Python client for Apache Kafka.

Blocking clients live here; asyncio ones in :mod:`kafkalite.aio` (same names, async
methods). Both run on one engine per client.

Example::

    from kafkalite import Producer, Consumer, AdminClient, NewTopic, TopicPartition

    with Producer({"bootstrap.servers": "127.0.0.1:9092"}) as producer:
        producer.send("orders", value=b"hello", key=b"k1").result(timeout=10)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from kafkalite import errors
from kafkalite._version import __version__
from kafkalite.types import (
    ConsumerGroupMetadata,
    ConsumerRecord,
    Header,
    IsolationLevel,
    OffsetAndMetadata,
    RecordMetadata,
    TimestampType,
    TopicPartition,
)

# Public name -> "module:attribute". Imported on first use (PEP 562) so that
# `import kafkalite` stays fast and a client's modules load only when used.
_LAZY = {
    "Producer": "kafkalite.producer.producer:Producer",
    "Consumer": "kafkalite.consumer.consumer:Consumer",
    "ShareConsumer": "kafkalite.share.consumer:ShareConsumer",
    "ShareConsumerRecord": "kafkalite.share.types:ShareConsumerRecord",
    "AcknowledgeType": "kafkalite.share.types:AcknowledgeType",
    "AdminClient": "kafkalite.admin.admin:AdminClient",
    "NewTopic": "kafkalite.admin.types:NewTopic",
    "NewPartitions": "kafkalite.admin.types:NewPartitions",
    "ConfigResource": "kafkalite.admin.types:ConfigResource",
    "OffsetSpec": "kafkalite.admin.types:OffsetSpec",
    "ConsumerRebalanceListener": "kafkalite.consumer.listener:ConsumerRebalanceListener",
}

if TYPE_CHECKING:
    from kafkalite.admin.admin import AdminClient
    from kafkalite.admin.types import ConfigResource, NewPartitions, NewTopic, OffsetSpec
    from kafkalite.consumer.consumer import Consumer
    from kafkalite.consumer.listener import ConsumerRebalanceListener
    from kafkalite.producer.producer import Producer
    from kafkalite.share.consumer import ShareConsumer
    from kafkalite.share.types import AcknowledgeType, ShareConsumerRecord


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        # PEP 562: hasattr() and `from ... import` expect AttributeError here.
        raise AttributeError(f"module 'kafkalite' has no attribute {name!r}")
    module, attr = target.split(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "AcknowledgeType", "AdminClient", "ConfigResource", "Consumer", "ConsumerGroupMetadata", "ConsumerRebalanceListener",
    "ConsumerRecord", "Header", "IsolationLevel", "NewPartitions", "NewTopic", "OffsetAndMetadata",
    "OffsetSpec", "Producer", "RecordMetadata", "ShareConsumer", "ShareConsumerRecord", "TimestampType",
    "TopicPartition", "__version__", "errors",
]
