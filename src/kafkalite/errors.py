"""kafkalite's one error registry.

Every error kafkalite raises is a :class:`KafkaError`. Broker error codes become
instances of generated :class:`ApiError` subclasses (one per Kafka error code, grouped
like the Java client's exception tree); :func:`error_for_code` is the only way protocol
code turns a code into an exception.

Client-side errors (bad settings, bad arguments, calls in the wrong state, timeouts) also
derive from the builtin a Python caller would catch, so ``except ValueError`` code keeps
working: :class:`ConfigError`, :class:`InvalidArgumentError` and
:class:`SerializationError` are ``ValueError`` s, :class:`InvalidArgumentTypeError` is
also a ``TypeError``, :class:`IllegalStateError` a ``RuntimeError``,
:class:`KafkaTimeoutError` a ``TimeoutError``. A bare builtin is raised only where a
Python protocol demands it (``KeyError`` from a mapping's ``__getitem__``,
``AttributeError`` from ``__getattr__``, ``NotImplementedError`` from an abstract
method); ``tests/unit/test_typed_errors.py`` fails on any other.

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
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidMetadataError,
    InvalidOffsetError,
    KafkaError,
    KafkaTimeoutError,
    ProtocolError,
    ProtocolLimitError,
    RefreshRetriableError,
    RetriableError,
    SerializationError,
    UnknownApiError,
    UnsupportedCodecError,
    UnsupportedFeatureError,
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
    """The connection to a broker failed or was closed (client-side; refresh and retry).

    Example::

        error = KafkaConnectionError("connection to 127.0.0.1:9092 closed")
        assert error.retriable                         # the client reconnects and retries
    """


class SslAuthenticationError(AuthenticationError):
    """The TLS handshake with a broker failed: its certificate did not verify (unknown
    CA, host name mismatch, expired), it refused our client certificate, or the two
    sides share no protocol version or cipher. Client-side (Java: SslAuthenticationException);
    the message names the broker and the TLS reason.

    Example::

        tls = AdminClient({"bootstrap.servers": bootstrap, "security.protocol": "SSL", "default.api.timeout.ms": 3000})
        try:
            tls.list_topics()                          # a plaintext listener: the handshake fails
        except (SslAuthenticationError, KafkaTimeoutError) as exc:
            print(type(exc).__name__, exc)
        tls.close()
    """

    def __str__(self) -> str:  # a client-side error: no broker error code to show
        return KafkaError.__str__(self)


class NoOffsetForPartitionError(InvalidOffsetError):
    """A partition has no committed offset and ``auto.offset.reset`` is ``none``.

    ``partitions`` (a list of TopicPartition) names every partition concerned.

    Example::

        strict = Consumer({"bootstrap.servers": bootstrap, "group.id": "no-offsets", "auto.offset.reset": "none"})
        strict.assign([TopicPartition("orders", 0)])
        try:
            strict.poll(timeout=10.0)
        except NoOffsetForPartitionError as exc:
            print(exc.partitions)                      # nothing committed and no reset policy
        strict.close()
    """

    def __init__(self, message: str | None = None, *, partitions: Any = (), **kwargs: Any) -> None:
        self.partitions = list(partitions)
        super().__init__(message, **kwargs)

    def __str__(self) -> str:  # a client-side error: no broker error code to show
        return KafkaError.__str__(self)


class CommitFailedError(KafkaError):
    """An offset commit cannot be completed: the member was removed from the group (it
    missed heartbeats or ``max.poll.interval.ms``) or no longer owns the partitions.
    Poll again to rejoin; the records since the last successful commit may be
    delivered again. Not retriable. (A commit during a rebalance of a member that is
    still in the group raises :class:`RebalanceInProgressError` instead, which is
    retriable: poll(), then commit again.)

    Example::

        consumer.subscribe(["orders"])
        records = consumer.poll(timeout=10.0)
        try:
            consumer.commit_sync()
        except CommitFailedError:                      # the group moved on: these records go to another member
            print("rebalanced; not committed")
    """


class LogTruncationError(OffsetOutOfRangeError):  # noqa: F405
    """The consumer's position is past the end of the log after a leader change (KIP-320):
    records it read were truncated. ``divergent_offsets`` maps each TopicPartition to the
    first offset known to be safe.

    Example::

        consumer.assign([TopicPartition("orders", 0)])
        try:
            consumer.poll(timeout=10.0)
        except LogTruncationError as exc:              # KIP-320: records past the divergence were lost
            print(exc.divergent_offsets)
    """

    def __init__(self, message: str | None = None, *, divergent_offsets: Any = None, **kwargs: Any) -> None:
        self.divergent_offsets = dict(divergent_offsets or {})
        super().__init__(message, **kwargs)


def error_for_code(code: int, message: str | None = None, **resource: Any) -> ApiError:
    """Return the exception for a Kafka error code (``code`` must not be 0).

    Unknown codes (from a newer broker) give :class:`UnknownApiError` keeping the number.

    Example::

        error = error_for_code(36, "Topic 'orders' already exists.", topic="orders")
        assert isinstance(error, TopicExistsError) and error.topic == "orders"
    """
    cls = ERRORS_BY_CODE.get(code)
    if cls is None:
        return UnknownApiError(code, message, **resource)
    return cls(message, **resource)


def raise_for_code(code: int, message: str | None = None, **resource: Any) -> None:
    """Raise the exception for ``code`` unless it is 0 (NONE).

    Example::

        raise_for_code(0)                              # NONE: nothing happens
        try:
            raise_for_code(3, topic="missing")
        except UnknownTopicOrPartitionError as exc:
            print(exc)
    """
    if code:
        raise error_for_code(code, message, **resource)


__all__ = [  # noqa: RUF022
    "KafkaError", "ConfigError", "InvalidArgumentError", "InvalidArgumentTypeError", "IllegalStateError", "KafkaTimeoutError", "ProtocolError", "ProtocolLimitError",
    "CorruptRecordsError", "UnsupportedCodecError", "UnsupportedVersionForClientError", "UnsupportedFeatureError",
    "SerializationError", "ClientClosedError", "WakeupError", "ApiError", "RetriableError",
    "RefreshRetriableError", "InvalidMetadataError", "ApplicationRecoverableError",
    "InvalidOffsetError", "UnknownApiError", "KafkaConnectionError", "ERRORS_BY_CODE",
    "error_for_code", "raise_for_code", "NoOffsetForPartitionError", "CommitFailedError",
    "LogTruncationError", "SslAuthenticationError",
]
__all__ += [cls.__name__ for cls in ERRORS_BY_CODE.values()]
__all__ += ["AuthenticationError", "AuthorizationError"]
