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

    Example::

        try:
            admin.describe_topics(["missing"])["missing"].result()
        except KafkaError as exc:                      # every error kafkalite raises
            print(type(exc).__name__, exc.retriable, exc.topic)
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
        """Fill in resource names (topic, partition, ...) that were unknown when raised.

        Example::

            error = KafkaTimeoutError("the fetch timed out").with_context(topic="orders", partition=0)
            assert (error.topic, error.partition) == ("orders", 0)
        """
        for key, value in resource.items():
            if value is not None and getattr(self, key, None) is None:
                setattr(self, key, value)
        return self


# ---------------------------------------------------------------- client-side errors


class ConfigError(KafkaError, ValueError):
    """A setting is unknown, has the wrong type or is out of range.

    Example::

        try:
            Producer({"bootstrap.servers": bootstrap, "linger.ms": "soon"})
        except ConfigError as exc:
            print(exc)                                 # names the setting and what it takes
    """


class InvalidArgumentError(KafkaError, ValueError):
    """An argument of a call is invalid: out of range, unknown, or inconsistent with
    another argument (Java's ``IllegalArgumentException``). Settings have
    :class:`ConfigError` instead.

    Example::

        try:
            producer.send_many("events", [b"a", b"b"], keys=[b"1"])
        except InvalidArgumentError as exc:      # also a ValueError
            print(exc)                           # send_many(): 1 keys for 2 values
    """


class InvalidArgumentTypeError(InvalidArgumentError, TypeError):
    """An argument of a call has a type the call cannot take (also a ``TypeError``).

    Example::

        orders = ConfigResource("topic", "orders")
        try:
            admin.describe_configs([orders], config_names=["retention.ms"])   # a mapping is documented
        except InvalidArgumentTypeError as exc:        # also a TypeError
            print(exc)
    """


class IllegalStateError(KafkaError, RuntimeError):
    """The call is not allowed in the client's current state (e.g. subscribe after assign).

    Example::

        consumer.assign([TopicPartition("orders", 0)])
        try:
            consumer.subscribe(["orders"])             # assign() and subscribe() do not mix
        except IllegalStateError as exc:
            print(exc)
    """


class KafkaTimeoutError(KafkaError, TimeoutError):
    """An operation did not complete within its timeout.

    Example::

        with Producer({"bootstrap.servers": "127.0.0.1:1", "max.block.ms": 500}) as offline:
            try:
                offline.send("orders", b"v")           # no broker: the topic's metadata never comes
            except KafkaTimeoutError as exc:
                print(exc)
    """

    retriable = True


class ProtocolError(KafkaError):
    """Bytes from the network do not follow the Kafka protocol (truncated, malformed, too large).

    Example::

        error = ProtocolError("the response ended 12 bytes early")
        assert not error.retriable                     # a broker or proxy bug: report it
    """


class ProtocolLimitError(ProtocolError):
    """An answer claims more than Kafka allows in one message (an array of more than
    1,000,000 items, or more than 10,000 tagged fields: Kafka 4.4's limits).

    Example::

        assert issubclass(ProtocolLimitError, ProtocolError)
        print(ProtocolLimitError("an array of 2147483647 elements"))
    """


class CorruptRecordsError(ProtocolError):
    """A record batch failed its CRC check or is malformed.

    Example::

        tp = TopicPartition("orders", 0)
        consumer.assign([tp])
        try:
            records = consumer.poll(timeout=10.0)
        except CorruptRecordsError as exc:             # skip past the bad batch (or stop and investigate)
            consumer.seek(tp, consumer.position(tp) + 1)
    """


class UnsupportedCodecError(ProtocolError):
    """A record batch uses a compression codec id this client does not know.

    Example::

        consumer.assign([TopicPartition("orders", 0)])
        try:
            consumer.poll(timeout=10.0)
        except UnsupportedCodecError as exc:           # e.g. a codec's optional package is missing
            print(exc)
    """


class UnsupportedVersionForClientError(KafkaError):
    """The broker supports no version of an API that this client can speak.

    Example::

        try:
            admin.describe_cluster()
        except UnsupportedVersionForClientError as exc:   # a broker too old for any version kafkalite speaks
            print(exc)
    """


class UnsupportedFeatureError(UnsupportedVersionForClientError):
    """The broker is too old (or configured without) a feature this call needs.

    Raised at once, never waited on: the message names the feature, what the broker
    lacks and the first Apache Kafka release that has it (``kafkalite.net.features``).

    Attributes:
        feature: the feature's name, e.g. ``"group.protocol=consumer"``.
        minimum_release: the first Kafka release with it, e.g. ``"4.0"``.
        broker: the broker asked (``"node 1 (127.0.0.1:9092)"``), when known.

    Example::

        error = UnsupportedFeatureError("share groups need a newer broker", feature="share groups", minimum_release="4.0")
        assert error.feature == "share groups"
    """

    def __init__(self, message: str | None = None, *, feature: str = "", minimum_release: str = "",
                 broker: str | None = None, **context: Any) -> None:
        super().__init__(message, **context)
        self.feature = feature
        self.minimum_release = minimum_release
        self.broker = broker


class SerializationError(KafkaError, ValueError):
    """A key or value could not be serialized or deserialized.

    Example::

        try:
            StringDeserializer().deserialize("orders", bytes([0xFF]))
        except SerializationError as exc:              # also a ValueError
            print(exc)                                 # not valid utf-8: ... (topic 'orders')
    """


class ClientClosedError(IllegalStateError):
    """The client was closed; create a new one.

    Example::

        producer.close()
        try:
            producer.send("orders", b"v")
        except ClientClosedError as exc:
            print(exc)
    """


class WakeupError(KafkaError):
    """``Consumer.wakeup()`` interrupted a blocking call.

    Example::

        consumer.assign([TopicPartition("orders", 0)])
        consumer.wakeup()
        try:
            consumer.poll(timeout=10.0)
        except WakeupError:
            print("woken up")
    """


# ---------------------------------------------------------------- broker error codes


class ApiError(KafkaError):
    """An error code returned by a broker. ``code`` and ``name`` are Kafka's.

    Example::

        try:
            admin.create_topics([NewTopic("orders", num_partitions=3, replication_factor=1)]).all()
        except ApiError as exc:
            assert (exc.code, exc.name) == (36, "TOPIC_ALREADY_EXISTS")
    """

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
    """Transient: the same request may succeed later.

    Example::

        error = error_for_code(7)                      # REQUEST_TIMED_OUT
        assert isinstance(error, RetriableError) and error.retriable
    """

    retriable = True


class RefreshRetriableError(RetriableError):
    """Transient, and the client should refresh what it knows (metadata, coordinator) first.

    Example::

        error = error_for_code(6)                      # NOT_LEADER_OR_FOLLOWER: refresh metadata, retry
        assert isinstance(error, RefreshRetriableError)
    """


class InvalidMetadataError(RefreshRetriableError):
    """The client's metadata is stale (leader moved, topic unknown): refresh and retry.

    Example::

        assert isinstance(error_for_code(3), InvalidMetadataError)     # UNKNOWN_TOPIC_OR_PARTITION
    """


class ApplicationRecoverableError(ApiError):
    """The application can recover (e.g. rejoin the group) but the request as sent failed.

    Example::

        error = error_for_code(25)                     # UNKNOWN_MEMBER_ID: rejoin the group
        assert isinstance(error, ApplicationRecoverableError) and not error.retriable
    """


class InvalidOffsetError(ApiError):
    """An offset is not valid for the partition.

    Example::

        assert isinstance(error_for_code(1), InvalidOffsetError)       # OFFSET_OUT_OF_RANGE
    """


class UnknownApiError(ApiError):
    """An error code this client does not know (a newer broker); ``code`` keeps the number.

    Example::

        error = error_for_code(9999)                   # a code newer than this client
        assert isinstance(error, UnknownApiError) and error.code == 9999
    """

    def __init__(self, code: int, message: str | None = None, **kwargs: Any) -> None:
        self.__dict__["code"] = code
        self.__dict__["name"] = f"UNKNOWN_ERROR_CODE_{code}"
        super().__init__(message or f"unknown error code {code}", **kwargs)
