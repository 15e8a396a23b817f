from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class OrderPlaced(_message.Message):
    __slots__ = ("order_id", "customer", "amount")
    ORDER_ID_FIELD_NUMBER: _ClassVar[int]
    CUSTOMER_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    order_id: str
    customer: str
    amount: float
    def __init__(self, order_id: _Optional[str] = ..., customer: _Optional[str] = ..., amount: _Optional[float] = ...) -> None: ...

class OrderShipped(_message.Message):
    __slots__ = ("order_id", "carrier")
    ORDER_ID_FIELD_NUMBER: _ClassVar[int]
    CARRIER_FIELD_NUMBER: _ClassVar[int]
    order_id: str
    carrier: str
    def __init__(self, order_id: _Optional[str] = ..., carrier: _Optional[str] = ...) -> None: ...

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
