"""Client-side partition assignors for the classic consumer group protocol.

``range``, ``roundrobin``, ``sticky`` and ``cooperative-sticky`` behave as the Java
client's assignors of the same names, and the consumer protocol bytes are Java's, so
kafkalite and Java consumers can share a group. See ``docs/assignors.md``.

Example::

    from kafkalite.consumer.assignors import assignor_by_name, Subscription
    assignor = assignor_by_name("org.apache.kafka.clients.consumer.RangeAssignor")
    assignor.assign({"orders": 4}, {"m1": Subscription(["orders"]), "m2": Subscription(["orders"])})
"""

from kafkalite.consumer.assignors.base import (
    CONSUMER_PROTOCOL_VERSION,
    PROTOCOL_TYPE,
    Assignment,
    ConsumerPartitionAssignor,
    RebalanceProtocol,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    validate_assignment,
    validate_cooperative_assignment,
)
from kafkalite.consumer.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafkalite.consumer.assignors.range import RangeAssignor
from kafkalite.consumer.assignors.registry import (
    JAVA_CLASS_NAMES,
    assignor_by_name,
    assignors_from_config,
    common_rebalance_protocol,
)
from kafkalite.consumer.assignors.roundrobin import RoundRobinAssignor
from kafkalite.consumer.assignors.sticky import AbstractStickyAssignor, StickyAssignor

__all__ = [
    "CONSUMER_PROTOCOL_VERSION",
    "JAVA_CLASS_NAMES",
    "PROTOCOL_TYPE",
    "AbstractStickyAssignor",
    "Assignment",
    "ConsumerPartitionAssignor",
    "CooperativeStickyAssignor",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "StickyAssignor",
    "Subscription",
    "assignor_by_name",
    "assignors_from_config",
    "common_rebalance_protocol",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
    "validate_assignment",
    "validate_cooperative_assignment",
]
