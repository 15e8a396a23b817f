"""kafkalite's one error registry.

Every error kafkalite raises is a :class:`KafkaError`. Broker error codes become
instances of generated :class:`ApiError` subclasses (one per Kafka error code, grouped
like the Java client's exception tree); :func:`error_for_code` is the only way protocol
code turns a code into an exception.

Example::

    from kafkalite import errors
    try:
        producer.send("orders", b"v").result(10)
    except errors.RecordTooLargeError as exc:      # MESSAGE_TOO_LARGE (10)
        print(exc.code, exc.name, exc.topic)
    except errors.KafkaError as exc:
        if exc.retriable:
            ...
"""

from __future__ import annotations

from typing import Any

from kafkalite._errors_base import (
    ApiError,
    ApplicationRecoverableError,
    ClientClosedError,
    ConfigError,
    CorruptRecordsError,
    IllegalStateError,
    InvalidMetadataError,
    InvalidOffsetError,
    KafkaError,
    KafkaTimeoutError,
    ProtocolError,
    RefreshRetriableError,
    RetriableError,
    SerializationError,
    UnknownApiError,
    UnsupportedCodecError,
    UnsupportedVersionForClientError,
    WakeupError,
)
from kafkalite._errors_gen import *  # noqa: F403  (one class per Kafka error code)
from kafkalite._errors_gen import (
    ERRORS_BY_CODE,
    AuthenticationError,
    AuthorizationError,
    NetworkError,
)


class KafkaConnectionError(NetworkError):
    """The connection to a broker failed or was closed (client-side; refresh and retry)."""


def error_for_code(code: int, message: str | None = None, **resource: Any) -> ApiError:
    """Return the exception for a Kafka error code (``code`` must not be 0).

    Unknown codes (from a newer broker) give :class:`UnknownApiError` keeping the number.
    """
    cls = ERRORS_BY_CODE.get(code)
    if cls is None:
        return UnknownApiError(code, message, **resource)
    return cls(message, **resource)


def raise_for_code(code: int, message: str | None = None, **resource: Any) -> None:
    """Raise the exception for ``code`` unless it is 0 (NONE)."""
    if code:
        raise error_for_code(code, message, **resource)


__all__ = [  # noqa: RUF022
    "KafkaError", "ConfigError", "IllegalStateError", "KafkaTimeoutError", "ProtocolError",
    "CorruptRecordsError", "UnsupportedCodecError", "UnsupportedVersionForClientError",
    "SerializationError", "ClientClosedError", "WakeupError", "ApiError", "RetriableError",
    "RefreshRetriableError", "InvalidMetadataError", "ApplicationRecoverableError",
    "InvalidOffsetError", "UnknownApiError", "KafkaConnectionError", "ERRORS_BY_CODE",
    "error_for_code", "raise_for_code",
]
__all__ += [cls.__name__ for cls in ERRORS_BY_CODE.values()]
__all__ += ["AuthenticationError", "AuthorizationError"]
