"""Share groups (KIP-932, "queues"): :class:`~kafkalite.share.consumer.ShareConsumer`.

Members of a share group read the same partitions together and acknowledge every
record (accept, release, reject). See ``docs/share_consumer.md``.
"""

from kafkalite.share.types import AcknowledgeType, ShareConsumerRecord

__all__ = ["AcknowledgeType", "ShareConsumerRecord"]
