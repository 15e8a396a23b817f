"""Base class of the generated request, response and data messages.

Each generated class carries, per version, one encode function (object -> bytes) and one
decode function (bytes -> object), picked from ``_ENCODERS`` / ``_DECODERS``. This module
adds the entry points and turns every low-level decoding failure into a typed
:class:`~kafkalite.errors.ProtocolError` naming the message and version.

Example::

    from kafkalite.protocol.messages.metadata import MetadataRequest, MetadataResponse
    payload = MetadataRequest(topics=None).encode(12)
    response = MetadataResponse.decode(raw_bytes, 12)
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

from kafkalite.errors import ProtocolError, UnsupportedVersionForClientError
from kafkalite.protocol.primitives import Struct, Truncated

M = TypeVar("M", bound="Message")

_new = object.__new__

# Default of constructor arguments for fields that may be null on the wire: omitted
# means "empty", an explicit None means null (e.g. MetadataRequest(topics=None): all topics).
_UNSET: Any = type("_Unset", (), {"__repr__": lambda self: "<unset>", "__slots__": ()})()


def _null(message: str, field: str) -> ProtocolError:
    return ProtocolError(f"{message}.{field} is null where the protocol requires a value")


def _trunc(what: str, pos: int, need: int, have: int) -> Truncated:
    return Truncated(f"truncated {what} at byte {pos}: needs {need} bytes, {have} remain")


def _unsupported(message: str, field: str) -> UnsupportedVersionForClientError:
    # encode_into() adds the version to the message.
    return UnsupportedVersionForClientError(f"{message}.{field} is set but")


class Message(Struct):
    """A top-level Kafka message (request, response, or a ``data`` schema)."""

    __slots__ = ()

    API_KEY: ClassVar[int] = -1
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 0
    FLEXIBLE_MIN_VERSION: ClassVar[int] = -1
    LATEST_VERSION_UNSTABLE: ClassVar[bool] = False
    _ENCODERS: ClassVar[dict[int, Callable[[Any, bytearray], None]]]
    _DECODERS: ClassVar[dict[int, Callable[[Any, int], tuple[Any, int]]]]

    @classmethod
    def is_flexible(cls, version: int) -> bool:
        """True if ``version`` uses compact types and tagged fields (KIP-482)."""
        return 0 <= cls.FLEXIBLE_MIN_VERSION <= version

    def encode_into(self, out: bytearray, version: int) -> None:
        """Append this message's body (no header) at ``version`` to ``out``."""
        try:
            encoder = self._ENCODERS[version]
        except KeyError:
            raise UnsupportedVersionForClientError(
                f"{type(self).__name__} has no version {version} "
                f"(this client knows {self.MIN_VERSION}-{self.MAX_VERSION})"
            ) from None
        try:
            encoder(self, out)
        except UnsupportedVersionForClientError as exc:
            raise UnsupportedVersionForClientError(
                f"{exc.message} version {version} of {type(self).__name__} cannot carry it "
                "(the broker is too old for this feature)"
            ) from None
        except (struct.error, AttributeError, TypeError, UnicodeEncodeError) as exc:
            raise ProtocolError(f"cannot encode {type(self).__name__} v{version}: {exc}") from exc

    def encode(self, version: int) -> bytes:
        """This message's body (no header) at ``version``."""
        out = bytearray()
        self.encode_into(out, version)
        return bytes(out)

    @classmethod
    def decode(cls: type[M], data: Any, version: int, pos: int = 0, *, exact: bool = True) -> M:
        """Decode a body at ``version``; ``exact`` rejects trailing bytes."""
        obj, end = cls.decode_from(data, version, pos)
        if exact and end != len(data):
            raise ProtocolError(
                f"{cls.__name__} v{version}: {len(data) - end} unexpected trailing bytes"
            )
        return obj

    @classmethod
    def decode_from(cls: type[M], data: Any, version: int, pos: int = 0) -> tuple[M, int]:
        """Decode a body at ``version`` starting at ``pos``; returns (message, end)."""
        try:
            decoder = cls._DECODERS[version]
        except KeyError:
            raise UnsupportedVersionForClientError(
                f"{cls.__name__} has no version {version} "
                f"(this client knows {cls.MIN_VERSION}-{cls.MAX_VERSION})"
            ) from None
        buf = data if isinstance(data, memoryview) else memoryview(data)
        try:
            return decoder(buf, pos)
        except ProtocolError as exc:
            raise type(exc)(f"{cls.__name__} v{version}: {exc.message}") from None
        except (struct.error, IndexError, ValueError, OverflowError, MemoryError) as exc:
            raise ProtocolError(f"{cls.__name__} v{version}: malformed or truncated ({exc})") from None


R = TypeVar("R", bound=Message, covariant=True)
#: For functions that send a Request[ResponseT] and return its ResponseT.
ResponseT = TypeVar("ResponseT", bound=Message)


class Request(Message, Generic[R]):
    """A request message; ``R`` is the class of the broker's response to it.

    Generated request classes name their response (``class MetadataRequest(
    Request["MetadataResponse"])``), so that sending one is typed end to end:
    ``await client.send(node, MetadataRequest(...))`` is a ``MetadataResponse``.
    """

    __slots__ = ()
