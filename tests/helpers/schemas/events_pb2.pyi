import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from tests.helpers.schemas import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class OrderPlaced(_message.Message):
    __slots__ = ("order_id", "total", "items", "placed_at")
    ORDER_ID_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    PLACED_AT_FIELD_NUMBER: _ClassVar[int]
    order_id: str
    total: _common_pb2.Money
    items: _containers.RepeatedScalarFieldContainer[str]
    placed_at: _timestamp_pb2.Timestamp
    def __init__(self, order_id: _Optional[str] = ..., total: _Optional[_Union[_common_pb2.Money, _Mapping]] = ..., items: _Optional[_Iterable[str]] = ..., placed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class OrderShipped(_message.Message):
    __slots__ = ("order_id", "carrier", "parcels")
    class Parcel(_message.Message):
        __slots__ = ("tracking", "weight_grams")
        TRACKING_FIELD_NUMBER: _ClassVar[int]
        WEIGHT_GRAMS_FIELD_NUMBER: _ClassVar[int]
        tracking: str
        weight_grams: int
        def __init__(self, tracking: _Optional[str] = ..., weight_grams: _Optional[int] = ...) -> None: ...
    ORDER_ID_FIELD_NUMBER: _ClassVar[int]
    CARRIER_FIELD_NUMBER: _ClassVar[int]
    PARCELS_FIELD_NUMBER: _ClassVar[int]
    order_id: str
    carrier: str
    parcels: _containers.RepeatedCompositeFieldContainer[OrderShipped.Parcel]
    def __init__(self, order_id: _Optional[str] = ..., carrier: _Optional[str] = ..., parcels: _Optional[_Iterable[_Union[OrderShipped.Parcel, _Mapping]]] = ...) -> None: ...

class OrderCancelled(_message.Message):
    __slots__ = ("order_id", "reason")
    ORDER_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    order_id: str
    reason: str
    def __init__(self, order_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class OrderEvent(_message.Message):
    __slots__ = ("placed", "shipped", "cancelled")
    PLACED_FIELD_NUMBER: _ClassVar[int]
    SHIPPED_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    placed: OrderPlaced
    shipped: OrderShipped
    cancelled: OrderCancelled
    def __init__(self, placed: _Optional[_Union[OrderPlaced, _Mapping]] = ..., shipped: _Optional[_Union[OrderShipped, _Mapping]] = ..., cancelled: _Optional[_Union[OrderCancelled, _Mapping]] = ...) -> None: ...
