"""OpenTelemetry tracing of the producer and the consumer (``otel.tracer.provider``).

Tracing is switched on per client, explicitly, with the setting ``otel.tracer.provider``:
a ``TracerProvider``, or ``"global"`` for OpenTelemetry's global one (what
``opentelemetry-instrument`` or the application's own setup installs). The choice is made
when the client is built because of how ``send()`` is built: with the C extension
``producer.send`` *is* a C function (``append_kernel.SendFunction``) and the common case
runs no Python at all. An untraced client keeps exactly that; a traced one gets the
wrappers below installed as its ``send`` / ``send_many`` / ``poll`` instance attributes.
Nothing is checked per record on the untraced path, and nothing is imported from
``opentelemetry`` unless a client asks for tracing.

What a traced client does (names per :mod:`kafkalite.otel.semconv`):

* ``send()``: a PRODUCER span per record (``"<topic> publish"``), made current while
  the record is serialized and appended; its context goes into the record's headers as
  W3C ``traceparent`` / ``tracestate`` (replacing ones already there, as the Java agent
  does) through OpenTelemetry's configured propagator; the span ends when the broker
  acknowledges the record (partition and offset attributes) or the send fails
  (``error.type``, status ERROR).
* ``send_many()``: one PRODUCER span for the batch (``messaging.batch.message_count``),
  its context in every record's headers (so the records take the general append path:
  the price of tracing), ended when the last record is acknowledged.
* ``poll()``: a receive span per poll that returned records or failed, from the call's
  start to its return, with the batch size, the topic and partition when they are the
  same for all records, and a link to each record's producer context (the first 128).
* :func:`process_span`: the application's CONSUMER span for handling one record, whose
  parent is the producer's context taken from the record's headers (and linked to it),
  as the Java agent's process spans are.

Example::

    from opentelemetry.sdk.trace import TracerProvider
    from kafkalite import Consumer, Producer
    from kafkalite.otel import process_span

    provider = TracerProvider()
    producer = Producer({"bootstrap.servers": "...", "otel.tracer.provider": provider})
    producer.send("orders", b"...")          # headers carry traceparent
    consumer = Consumer({"bootstrap.servers": "...", "group.id": "billing",
                         "otel.tracer.provider": provider})
    for record in consumer.poll(1.0):
        with process_span(record, consumer):
            handle(record)
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from kafkalite._version import __version__
from kafkalite.errors import ConfigError
from kafkalite.otel.providers import resolve_provider
from kafkalite.otel.semconv import Conventions, error_type

if TYPE_CHECKING:
    from kafkalite.otel.durations import OperationDurations

__all__ = ["Tracing", "install_consumer_tracing", "install_producer_tracing", "process_span", "tracing_for"]

MAX_LINKS = 128  # the SDK's default span link limit
_TRACE_HEADERS = ("traceparent", "tracestate")


def _otel() -> Any:
    try:
        from opentelemetry import propagate, trace
    except ImportError:  # pragma: no cover - exercised without the extra installed
        raise ConfigError("setting 'otel.tracer.provider' needs the OpenTelemetry API: "
                          "pip install 'kafkalite[otel]'") from None
    return trace, propagate


class HeaderSetter:
    """Writes a propagator's fields into a Kafka header list (replacing same-named ones)."""

    def set(self, carrier: list[tuple[str, bytes | None]], key: str, value: str) -> None:
        carrier[:] = [h for h in carrier if h[0] != key]
        carrier.append((key, value.encode("utf-8")))


class HeaderGetter:
    """Reads a propagator's fields from a record's headers (list of (str, bytes))."""

    def get(self, carrier: Any, key: str) -> list[str] | None:
        if not carrier:
            return None
        found = [v.decode("utf-8", "replace") for k, v in carrier if k == key and v is not None]
        return found or None

    def keys(self, carrier: Any) -> list[str]:
        return [k for k, _ in carrier] if carrier else []


SETTER = HeaderSetter()
GETTER = HeaderGetter()


class Tracing:
    """The tracer and naming of one client (built only when tracing is on).

    Args:
        provider: a ``TracerProvider``, ``"global"`` or ``"module:attr"``
            (:mod:`kafkalite.otel.providers`); None: no spans, only ``durations``.
        client_id: ``client.id`` (``messaging.client_id``).
        group_id: the consumer group (consumers), or None.
        durations: the duration histograms (``otel.meter.provider``), or None.
    """

    def __init__(self, provider: Any, client_id: str = "", group_id: str | None = None,
                 durations: OperationDurations | None = None) -> None:
        trace, propagate = _otel()
        self._trace = trace
        self._propagate = propagate
        #: False when only the duration histograms are wanted (a meter provider, no tracer
        #: provider): no span is recorded and no trace context goes into headers.
        self.traced = provider is not None
        if provider is None:
            provider = trace.NoOpTracerProvider()
        self.provider = provider = resolve_provider("otel.tracer.provider", provider, "get_tracer",
                                                    trace.get_tracer_provider)
        self.durations = durations
        self.conventions = conv = Conventions()
        self.tracer = provider.get_tracer("kafkalite", __version__, schema_url=conv.schema_url)
        self.client_id = client_id
        self.group_id = group_id
        kinds = trace.SpanKind
        self.PRODUCER, self.CONSUMER, self.CLIENT = kinds.PRODUCER, kinds.CONSUMER, kinds.CLIENT
        self._error = trace.Status(trace.StatusCode.ERROR)

    # ------------------------------------------------------------ helpers

    def inject(self, span: Any, headers: Any) -> list[tuple[str, bytes | None]]:
        """A header list carrying ``span``'s context (a copy of ``headers`` plus it)."""
        if headers is None:
            carrier: list[tuple[str, bytes | None]] = []
        elif hasattr(headers, "items"):
            carrier = list(headers.items())
        else:
            carrier = list(headers)
        self._propagate.inject(carrier, context=self._trace.set_span_in_context(span), setter=SETTER)
        return carrier

    def extract(self, headers: Any) -> Any:
        """The producer's context from a record's headers (an empty context if none)."""
        return self._propagate.extract(headers or (), getter=GETTER)

    def span_context_of(self, headers: Any) -> Any:
        """The producer's span context in ``headers``, or None when there is none."""
        if not headers:
            return None
        ctx = self._trace.get_current_span(self.extract(headers)).get_span_context()
        return ctx if ctx.is_valid else None

    def fail(self, span: Any, exc: BaseException) -> None:
        span.set_attribute("error.type", error_type(exc))
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        span.record_exception(exc)

    def receive_span(self, records: Sequence[Any], start_ns: int, error: BaseException | None = None) -> None:
        """Record one finished poll (records returned, or the error it raised)."""
        conv = self.conventions
        topics = {r[6] for r in records}
        partitions = {(r[6], r[7]) for r in records}
        topic = next(iter(topics)) if len(topics) == 1 else None
        partition = next(iter(partitions))[1] if len(partitions) == 1 else None
        links: list[Any] = []
        trace = self._trace
        for r in records:
            if len(links) >= MAX_LINKS:
                break
            ctx = self.span_context_of(r[4])
            if ctx is not None:
                links.append(trace.Link(ctx))
        kind = self.CLIENT if conv.receive_is_client_span() else self.CONSUMER
        span = self.tracer.start_span(
            conv.span_name("receive", topic), kind=kind, start_time=start_ns, links=links,
            attributes=conv.attributes("receive", topic, partition=partition, group=self.group_id,
                                       client_id=self.client_id, count=len(records)))
        if error is not None:
            self.fail(span, error)
        span.end()


def tracing_for(cfg: Any, group_id: str | None = None, *, producer: bool = False) -> Tracing | None:
    """The :class:`Tracing` of a client's settings: spans for ``otel.tracer.provider``,
    duration histograms for ``otel.meter.provider``; None (no wrappers) with neither.

    A producer with a meter provider but no tracer provider gets no wrappers either: its
    send histogram would need a Python wrapper, a completion callback and an SDK histogram
    record per record (18 µs of CPU per record measured, 45 times the plain C send), a
    price nobody asks for by exporting the client's gauges. Its send durations are
    recorded when it is traced (see docs/observability.md).
    """
    provider = cfg["otel.tracer.provider"]
    meter = cfg["otel.meter.provider"]
    if provider is None and (meter is None or producer):
        return None
    durations = None
    if meter is not None:
        from kafkalite.otel.durations import OperationDurations

        durations = OperationDurations(meter, group_id)
    return Tracing(provider, cfg["client.id"], group_id, durations)


# ---------------------------------------------------------------- producer


def install_producer_tracing(producer: Any, tracing: Tracing, *, asynchronous: bool = False) -> None:
    """Replace ``producer.send`` (and ``send_many``) with traced versions (instance attributes)."""
    producer._tracing = tracing
    inner_send = producer.send  # the C SendFunction, or the bound method
    conv = tracing.conventions
    tracer = tracing.tracer
    client_id = tracing.client_id
    trace = tracing._trace
    traced = tracing.traced
    durations = tracing.durations
    monotonic = time.monotonic

    def inject(span: Any, headers: Any) -> Any:
        return tracing.inject(span, headers) if traced else headers

    def ended(topic: str, started: float, error: BaseException | None) -> None:
        if durations is not None:
            durations.record("send", monotonic() - started, topic, error)

    def start(topic: str, partition: int | None, tombstone: bool, count: int | None = None) -> Any:
        return tracer.start_span(conv.span_name("send", topic), kind=tracing.PRODUCER,
                                 attributes=conv.attributes("send", topic, partition=partition, client_id=client_id,
                                                            count=count, tombstone=tombstone))

    def finisher(span: Any, callback: Callable[..., Any] | None, topic: str,
                 started: float) -> Callable[[Any, BaseException | None], Any]:
        def done(metadata: Any, error: BaseException | None) -> Any:
            if error is None:
                span.set_attributes(conv.acknowledged(metadata.partition, metadata.offset))
            else:
                tracing.fail(span, error)
            span.end()
            ended(topic, started, error)
            if callback is not None:
                return callback(metadata, error)
            return None
        return done

    class Many:
        """One span for one send_many() call, ended when its last record is done."""

        def __init__(self, topic: str, values: Sequence[Any], keys: Sequence[Any] | None,
                     partition: int | None, timestamp: int | None) -> None:
            from kafkalite.producer.futures import many_args

            self.started = monotonic()
            self.topic = topic
            self.values, self.keys = many_args(values, keys)
            n = self.n = len(self.values)
            self.timestamp = int(time.time() * 1000) if timestamp is None else timestamp
            self.span = start(topic, partition, False, count=n)
            self.headers = inject(self.span, None)
            self.left = n
            self.first_error: list[BaseException] = []
            self.entries: list[tuple[Any, int, int]] = []

        def key(self, i: int) -> Any:
            return self.keys[i] if self.keys is not None else None

        def one_done(self, metadata: Any, error: BaseException | None) -> None:
            # Callbacks run on the engine, one at a time: no lock needed.
            if error is not None and not self.first_error:
                self.first_error.append(error)
            self.left -= 1
            if self.left == 0:
                if self.first_error:
                    tracing.fail(self.span, self.first_error[0])
                self.span.end()
                ended(self.topic, self.started, self.first_error[0] if self.first_error else None)

        def appended(self, future: Any, i: int) -> None:
            self.entries.append((future._batch, future._index, i))

        def failed(self, exc: BaseException) -> None:
            # Records appended before the failure are still sent (as send_many does);
            # the span ends with this error once they are acknowledged.
            self.first_error.insert(0, exc)
            self.left -= self.n - len(self.entries)
            if self.left == 0:
                tracing.fail(self.span, exc)
                self.span.end()
                ended(self.topic, self.started, exc)

        def done(self) -> None:
            if self.n == 0:
                self.span.end()
                ended(self.topic, self.started, None)

    if asynchronous:
        from kafkalite.producer.futures import AsyncSendManyResult

        async def send_async(topic: str, value: Any = None, key: Any = None, partition: int | None = None,
                             timestamp: int | None = None, headers: Any = None, callback: Any = None) -> Any:
            started = monotonic()
            span = start(topic, partition, value is None)
            try:
                with trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
                    return await inner_send(topic, value, key, partition, timestamp, inject(span, headers),
                                            finisher(span, callback, topic, started))
            except BaseException as exc:
                tracing.fail(span, exc)
                span.end()
                ended(topic, started, exc)
                raise

        async def send_many_async(topic: str, values: Sequence[Any], keys: Sequence[Any] | None = None, *,
                                  partition: int | None = None, timestamp: int | None = None) -> Any:
            many = Many(topic, values, keys, partition, timestamp)
            try:
                with trace.use_span(many.span, end_on_exit=False, record_exception=False,
                                    set_status_on_exception=False):
                    for i in range(many.n):
                        many.appended(await inner_send(topic, many.values[i], many.key(i), partition,
                                                       many.timestamp, many.headers, many.one_done), i)
            except BaseException as exc:
                many.failed(exc)
                raise
            many.done()
            return AsyncSendManyResult(many.entries, many.n)

        producer.send = send_async
        producer.send_many = send_many_async
        return

    def send(topic: str, value: Any = None, key: Any = None, partition: int | None = None,
             timestamp: int | None = None, headers: Any = None, callback: Any = None) -> Any:
        started = monotonic()
        span = start(topic, partition, value is None)
        try:
            with trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
                return inner_send(topic, value, key, partition, timestamp, inject(span, headers),
                                  finisher(span, callback, topic, started))
        except BaseException as exc:
            tracing.fail(span, exc)
            span.end()
            ended(topic, started, exc)
            raise

    def send_many(topic: str, values: Sequence[Any], keys: Sequence[Any] | None = None, *,
                  partition: int | None = None, timestamp: int | None = None) -> Any:
        from kafkalite.producer.futures import SendManyResult

        many = Many(topic, values, keys, partition, timestamp)
        try:
            with trace.use_span(many.span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
                for i in range(many.n):
                    many.appended(inner_send(topic, many.values[i], many.key(i), partition, many.timestamp,
                                             many.headers, many.one_done), i)
        except BaseException as exc:
            many.failed(exc)
            raise
        many.done()
        return SendManyResult(many.entries, many.n)

    producer.send = send
    producer.send_many = send_many


# ---------------------------------------------------------------- consumer


def install_consumer_tracing(consumer: Any, tracing: Tracing, *, asynchronous: bool = False) -> None:
    """Replace ``consumer.poll`` with a traced version (an instance attribute)."""
    consumer._tracing = tracing
    inner_poll = consumer.poll
    from kafkalite.errors import KafkaError

    traced = tracing.traced
    durations = tracing.durations

    def polled(records: Sequence[Any], start_ns: int, error: BaseException | None = None) -> None:
        if traced:
            tracing.receive_span(records, start_ns, error)
        if durations is not None:
            durations.polled(records, (time.time_ns() - start_ns) / 1e9, error)

    if asynchronous:
        async def poll_async(timeout: float | None = None, max_records: int | None = None) -> Any:
            start_ns = time.time_ns()
            try:
                records = await inner_poll(timeout, max_records)
            except KafkaError as exc:
                polled((), start_ns, exc)
                raise
            if records:
                polled(records, start_ns)
            return records

        consumer.poll = poll_async
        return

    def poll(timeout: float | None = None, max_records: int | None = None) -> Any:
        start_ns = time.time_ns()
        try:
            records = inner_poll(timeout, max_records)
        except KafkaError as exc:
            polled((), start_ns, exc)
            raise
        if records:
            polled(records, start_ns)
        return records

    consumer.poll = poll


@contextlib.contextmanager
def process_span(record: Any, consumer: Any = None, *, tracer_provider: Any = None,
                 link_only: bool = False) -> Iterator[Any]:
    """The application's span for processing ``record`` (a CONSUMER span).

    Its parent is the producer's context from the record's ``traceparent`` header (and
    it links to it), so the trace runs from the producing service into this one; with
    ``link_only=True`` it stays in the current trace and only links to the producer.
    Uses ``consumer``'s tracing (``otel.tracer.provider``), or ``tracer_provider``; with
    neither it is a no-op that yields None. An exception escaping the block marks the
    span as failed (``error.type``) and is re-raised.

    Example::

        from kafkalite.otel import process_span

        consumer.assign([TopicPartition("orders", 0)])
        for record in consumer.poll(timeout=10.0):
            with process_span(record, consumer) as span:    # a child of the record's send span
                print(record.value)
    """
    tracing: Tracing | None = getattr(consumer, "_tracing", None) if consumer is not None else None
    if tracer_provider is not None:
        group = tracing.group_id if tracing is not None else None
        client_id = tracing.client_id if tracing is not None else ""
        durations = tracing.durations if tracing is not None else None
        tracing = Tracing(tracer_provider, client_id, group, durations)
    if tracing is None:
        yield None
        return
    if not tracing.traced:  # the consumer has a meter provider only: the duration, no span
        assert tracing.durations is not None
        started = time.monotonic()
        try:
            yield None
        except BaseException as exc:
            tracing.durations.record("process", time.monotonic() - started, record[6], exc)
            raise
        tracing.durations.record("process", time.monotonic() - started, record[6])
        return
    durations = tracing.durations
    started = time.monotonic()
    conv = tracing.conventions
    trace = tracing._trace
    producer_ctx = tracing.span_context_of(record[4])
    links = [trace.Link(producer_ctx)] if producer_ctx is not None else []
    parent = None if link_only or producer_ctx is None else tracing.extract(record[4])
    span = tracing.tracer.start_span(
        conv.span_name("process", record[6]), context=parent, kind=tracing.CONSUMER, links=links,
        attributes=conv.attributes("process", record[6], partition=record[7], offset=record[0],
                                   group=tracing.group_id, client_id=tracing.client_id,
                                   tombstone=record[3] is None))
    with trace.use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
        try:
            yield span
        except BaseException as exc:
            tracing.fail(span, exc)
            if durations is not None:
                durations.record("process", time.monotonic() - started, record[6], exc)
            raise
    if durations is not None:
        durations.record("process", time.monotonic() - started, record[6])
