"""The root of kafkalite's exception tree.

Everything kafkalite raises on purpose is a :class:`KafkaError`. Broker error codes map
to :class:`ApiError` subclasses (generated, one per code, in ``_errors_gen``); the
intermediate classes below mirror the Java client's grouping so that callers can catch
by intent: ``InvalidMetadataError`` means "refresh metadata and retry",
``RetriableError`` means "the same request may succeed later".

Client-side errors that stand for a builtin one also derive from it, so code written
against the builtins keeps working: :class:`ConfigError`, :class:`InvalidArgumentError`
and :class:`SerializationError` are ``ValueError`` s, :class:`InvalidArgumentTypeError`
is also a ``TypeError``, :class:`IllegalStateError` a ``RuntimeError`` and
:class:`KafkaTimeoutError` a ``TimeoutError``. Builtins are raised only where Python's
protocols require them (``KeyError`` from ``__getitem__``, ``AttributeError`` from
``__getattr__``, ``NotImplementedError`` from abstract methods); the allowlist in
``tests/unit/test_typed_errors.py`` names each such place with its reason.

Import these names from :mod:`kafkalite.errors`, not from here.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

E = TypeVar("E", bound="KafkaError")


class KafkaError(Exception):
    """Base class of every error kafkalite raises.

    Attributes:
        retriable: the same operation may succeed if tried again later.
        outcome_unknown: (producer delivery errors) the record may have been written.
        fatal: the client that raised it cannot continue (e.g. a fenced producer);
            close it.
        abortable: the current transaction must be aborted, then work can go on.
        topic, partition, group_id, transactional_id: the resource concerned, when
            known, so the message can name it.
    """

    retriable: bool = False  # the class's answer; an instance may refine it (AdminBatchError)
    fatal_default: ClassVar[bool] = False
    abortable_default: ClassVar[bool] = False
    #: On a producer's delivery error: the record reached a broker at least once before
    #: the send failed (a request timed out, a connection broke), so it may have been
    #: written after all (librdkafka's "possibly persisted"; Java cannot tell). False: the
    #: record was certainly not written.
    outcome_unknown: bool = False

    def __init__(
        self,
        message: str | None = None,
        *,
        topic: str | None = None,
        partition: int | None = None,
        group_id: str | None = None,
        transactional_id: str | None = None,
        fatal: bool | None = None,
        abortable: bool | None = None,
        **context: Any,
    ) -> None:
        self.message = message or (self.__doc__ or type(self).__name__).strip().splitlines()[0]
        self.topic = topic
        self.partition = partition
        self.group_id = group_id
        self.transactional_id = transactional_id
        self.fatal = self.fatal_default if fatal is None else fatal
        self.abortable = self.abortable_default if abortable is None else abortable
        self.context = context
        super().__init__(self.message)

    def _resource_text(self) -> str:
        parts = []
        if self.topic is not None:
            parts.append(
                f"topic '{self.topic}'" + (f" partition {self.partition}" if self.partition is not None else "")
            )
        elif self.partition is not None:
            parts.append(f"partition {self.partition}")
        if self.group_id is not None:
            parts.append(f"group '{self.group_id}'")
        if self.transactional_id is not None:
            parts.append(f"transactional.id '{self.transactional_id}'")
        # Other resources (a config resource, an ACL binding, a SCRAM user ...) are
        # named by a free-form ``resource=`` given at construction or by with_context().
        other = self.__dict__.get("resource", self.context.get("resource"))
        if other is not None:
            parts.append(str(other))
        return ", ".join(parts)

    def __str__(self) -> str:
        where = self._resource_text()
        return f"{self.message} ({where})" if where else self.message

    def with_context(self: E, **resource: Any) -> E:
        """Fill in resource names (topic, partition, ...) that were unknown when raised."""
        for key, value in resource.items():
            if value is not None and getattr(self, key, None) is None:
                setattr(self, key, value)
        return self


# ---------------------------------------------------------------- client-side errors


class ConfigError(KafkaError, ValueError):
    """A setting is unknown, has the wrong type or is out of range."""


class InvalidArgumentError(KafkaError, ValueError):
    """An argument of a call is invalid: out of range, unknown, or inconsistent with
    another argument (Java's ``IllegalArgumentException``). Settings have
    :class:`ConfigError` instead.

    Example::

        producer.send_many("events", [b"a", b"b"], keys=[b"1"])
        # InvalidArgumentError: send_many(): 1 keys for 2 values
    """


class InvalidArgumentTypeError(InvalidArgumentError, TypeError):
    """An argument of a call has a type the call cannot take (also a ``TypeError``)."""


class IllegalStateError(KafkaError, RuntimeError):
    """The call is not allowed in the client's current state (e.g. subscribe after assign)."""


class KafkaTimeoutError(KafkaError, TimeoutError):
    """An operation did not complete within its timeout."""

    retriable = True


class ProtocolError(KafkaError):
    """Bytes from the network do not follow the Kafka protocol (truncated, malformed, too large)."""


class ProtocolLimitError(ProtocolError):
    """An answer claims more than Kafka allows in one message (an array of more than
    1,000,000 items, or more than 10,000 tagged fields: Kafka 4.4's limits)."""


class CorruptRecordsError(ProtocolError):
    """A record batch failed its CRC check or is malformed."""


class UnsupportedCodecError(ProtocolError):
    """A record batch uses a compression codec id this client does not know."""


class UnsupportedVersionForClientError(KafkaError):
    """The broker supports no version of an API that this client can speak."""


class UnsupportedFeatureError(UnsupportedVersionForClientError):
    """The broker is too old (or configured without) a feature this call needs.

    Raised at once, never waited on: the message names the feature, what the broker
    lacks and the first Apache Kafka release that has it (``kafkalite.net.features``).

    Attributes:
        feature: the feature's name, e.g. ``"group.protocol=consumer"``.
        minimum_release: the first Kafka release with it, e.g. ``"4.0"``.
        broker: the broker asked (``"node 1 (127.0.0.1:9092)"``), when known.
    """

    def __init__(self, message: str | None = None, *, feature: str = "", minimum_release: str = "",
                 broker: str | None = None, **context: Any) -> None:
        super().__init__(message, **context)
        self.feature = feature
        self.minimum_release = minimum_release
        self.broker = broker


class SerializationError(KafkaError, ValueError):
    """A key or value could not be serialized or deserialized."""


class ClientClosedError(IllegalStateError):
    """The client was closed; create a new one."""


class WakeupError(KafkaError):
    """``Consumer.wakeup()`` interrupted a blocking call."""


# ---------------------------------------------------------------- broker error codes


class ApiError(KafkaError):
    """An error code returned by a broker. ``code`` and ``name`` are Kafka's."""

    code: ClassVar[int] = -1
    name: ClassVar[str] = "UNKNOWN_SERVER_ERROR"

    def __init__(self, message: str | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)

    def __str__(self) -> str:
        base = f"[{self.name} ({self.code})] {self.message}"
        where = self._resource_text()
        return f"{base} ({where})" if where else base

    def __reduce__(self) -> Any:
        # Keep the instance's (possibly unknown) code through pickling (Spark tasks).
        return (_rebuild_api_error, (type(self), self.code, self.message, self.__dict__.copy()))


def _rebuild_api_error(cls: type[ApiError], code: int, message: str, state: dict[str, Any]) -> ApiError:
    if cls is UnknownApiError:
        err: ApiError = UnknownApiError(code, message)
    else:
        err = cls(message)
    err.__dict__.update(state)
    return err


class RetriableError(ApiError):
    """Transient: the same request may succeed later."""

    retriable = True


class RefreshRetriableError(RetriableError):
    """Transient, and the client should refresh what it knows (metadata, coordinator) first."""


class InvalidMetadataError(RefreshRetriableError):
    """The client's metadata is stale (leader moved, topic unknown): refresh and retry."""


class ApplicationRecoverableError(ApiError):
    """The application can recover (e.g. rejoin the group) but the request as sent failed."""


class InvalidOffsetError(ApiError):
    """An offset is not valid for the partition."""


class UnknownApiError(ApiError):
    """An error code this client does not know (a newer broker); ``code`` keeps the number."""

    def __init__(self, code: int, message: str | None = None, **kwargs: Any) -> None:
        self.__dict__["code"] = code
        self.__dict__["name"] = f"UNKNOWN_ERROR_CODE_{code}"
        super().__init__(message or f"unknown error code {code}", **kwargs)
