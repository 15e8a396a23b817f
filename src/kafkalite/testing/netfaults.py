"""Network faults between clients and brokers, from pure Python: a TCP proxy per broker
whose faults are switched on and off while the test runs.

Each node of a ``LocalBroker(network_faults=True)`` / ``LocalCluster(...,
network_faults=True)`` has a second listener, ``PROXIED``, advertised at its proxy's
port: a client that bootstraps through the proxies (``cluster.faults.bootstrap``) gets
metadata naming the proxies, so every connection it makes stays behind them. Faults, per
proxy (``cluster.faults[node_id]``) or on all of them (``cluster.faults``):

* ``latency(ms, jitter_ms=0, direction=BOTH)``: every chunk is delayed (order kept);
* ``bandwidth(bytes_per_s, direction=BOTH)``: paced writes;
* ``black_hole()``: connections are accepted but nothing is forwarded either way
  (data waits, as behind a partition; it flows again when the hole closes);
* ``reset()``: every open connection gets a TCP RST now; ``refuse_new()`` resets new
  ones as they arrive;
* ``partial_writes(max_fragment=3, direction=BOTH)``: bytes are delivered in tiny
  fragments with pauses in between (a peer must reassemble frames);
* ``corrupt(rate, direction=TO_CLIENT, records_only=False)``: flips bytes at ``rate``
  per byte; ``records_only`` flips only bytes covered by record batch CRCs in Fetch
  responses (see :mod:`kafkalite.testing.fault_frames`), so the framing survives.

Each switch takes effect at once and returns a :class:`Fault`: ``fault.undo()`` switches
it off, so does the end of a ``with`` block around it (``with faults.black_hole():
...``); ``heal()`` clears everything. ``stats`` counts connections, bytes, writes and corrupted bytes.

Example::

    with LocalBroker(network_faults=True) as broker:
        faults = broker.faults
        consumer = Consumer({"bootstrap.servers": faults.bootstrap, ...})
        with faults.latency(200):
            ...   # every request takes 400 ms more
        with faults.black_hole():
            ...   # nothing answers

The proxies run on one background thread (an asyncio loop) shared by the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import random
import socket
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kafkalite.testing.fault_frames import FrameSplitter, RequestTracker, corrupt, record_regions


class Direction(enum.Flag):
    """Which way a network fault acts: toward the broker, toward the client, or both.

    Example::

        network_faults.latency(200, direction=Direction.TO_CLIENT)
    """

    TO_BROKER = enum.auto()
    TO_CLIENT = enum.auto()
    BOTH = TO_BROKER | TO_CLIENT


TO_BROKER, TO_CLIENT, BOTH = Direction.TO_BROKER, Direction.TO_CLIENT, Direction.BOTH


@dataclass
class Flow:
    """The faults of one direction of one proxy."""

    latency_s: float = 0.0
    jitter_s: float = 0.0
    bytes_per_s: float = 0.0  # 0: unlimited
    max_fragment: int = 0  # 0: whole chunks
    corrupt_rate: float = 0.0
    records_only: bool = False


@dataclass
class ProxyStats:
    connections: int = 0
    resets: int = 0
    bytes: dict[str, int] = field(default_factory=lambda: {"to_broker": 0, "to_client": 0})
    writes: dict[str, int] = field(default_factory=lambda: {"to_broker": 0, "to_client": 0})
    corrupted: int = 0


class Fault:
    """A fault switched on: it stays on until :meth:`undo` (or the end of a ``with``
    block around it, or ``heal()``)."""

    def __init__(self, target: Any, undo: Any) -> None:
        self.target = target
        self._undo = undo
        self._done = False

    def undo(self) -> None:
        if not self._done:
            self._done = True
            self._undo()

    def __enter__(self) -> Any:
        return self.target

    def __exit__(self, *exc: object) -> None:
        self.undo()


# ---------------------------------------------------------------- the shared loop


class _Loop:
    """One asyncio loop on a daemon thread for every proxy of the process."""

    _instance: _Loop | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="kafkalite-netfaults", daemon=True)
        self.thread.start()

    @classmethod
    def get(cls) -> _Loop:
        with cls._lock:
            if cls._instance is None or not cls._instance.thread.is_alive():
                cls._instance = _Loop()
            return cls._instance

    def run(self, coro: Any, timeout: float = 10.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Any, *args: Any) -> None:
        self.loop.call_soon_threadsafe(fn, *args)


# ---------------------------------------------------------------- one proxied connection


class _Link:
    """One client connection and its upstream connection to the broker.

    Each direction has a reader (reads, corrupts, stamps each chunk with the time it may
    be delivered) and a writer (waits until then, writes in fragments or paced): reading
    goes on while earlier chunks wait out their latency, as on a real long link.
    """

    def __init__(self, proxy: FaultyProxy, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self.proxy = proxy
        self.client_r, self.client_w = client_r, client_w
        self.broker_w: asyncio.StreamWriter | None = None
        self.tracker = RequestTracker()
        self.tasks: list[asyncio.Task[None]] = []

    async def run(self) -> None:
        proxy = self.proxy
        await proxy._open.wait()  # a black hole holds new connections too
        try:
            broker_r, self.broker_w = await asyncio.open_connection(proxy.target_host, proxy.target_port)
        except OSError:
            self.abort()
            return
        for w in (self.client_w, self.broker_w):
            _nodelay(w)
        to_broker: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue(maxsize=256)
        to_client: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue(maxsize=256)
        writers = [asyncio.ensure_future(self._writer(self.broker_w, to_broker, TO_BROKER)),
                   asyncio.ensure_future(self._writer(self.client_w, to_client, TO_CLIENT))]
        self.tasks = [asyncio.ensure_future(self._reader(self.client_r, to_broker, TO_BROKER)),
                      asyncio.ensure_future(self._reader(broker_r, to_client, TO_CLIENT)), *writers]
        await asyncio.wait(writers, return_when=asyncio.FIRST_COMPLETED)
        self.abort(graceful=True)

    async def _reader(self, reader: asyncio.StreamReader, queue: asyncio.Queue[tuple[float, bytes] | None],
                      direction: Direction) -> None:
        proxy = self.proxy
        splitter = FrameSplitter()  # responses are forwarded whole frames: the corruption
        last = 0.0                  # of records needs them, and turning it on mid-stream is safe
        try:
            while True:
                await proxy._open.wait()
                data = await reader.read(65536)
                if not data:
                    return
                flow = proxy._flows[direction]
                if direction is TO_BROKER:
                    self.tracker.feed(data)
                    chunks = [data]
                else:
                    chunks = splitter.feed(data)
                for i, chunk in enumerate(chunks):
                    if flow.corrupt_rate:
                        chunks[i] = self._corrupt(chunk, flow, direction)
                delay = flow.latency_s + proxy._rng.uniform(-flow.jitter_s, flow.jitter_s) if flow.jitter_s \
                    else flow.latency_s
                last = max(last, time.monotonic() + max(0.0, delay))  # order is kept
                for chunk in chunks:
                    await queue.put((last, chunk))
        except (OSError, asyncio.IncompleteReadError):
            return
        finally:
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(None)

    def _corrupt(self, data: bytes, flow: Flow, direction: Direction) -> bytes:
        buf = bytearray(data)
        if flow.records_only:
            request = self.tracker.answered(data) if direction is TO_CLIENT else None
            regions = record_regions(buf, request) if request is not None else []
        else:
            regions = [(0, len(buf))]
        self.proxy.stats.corrupted += corrupt(buf, regions, flow.corrupt_rate, self.proxy._rng)
        return bytes(buf)

    async def _writer(self, writer: asyncio.StreamWriter, queue: asyncio.Queue[tuple[float, bytes] | None],
                      direction: Direction) -> None:
        proxy = self.proxy
        name = "to_broker" if direction is TO_BROKER else "to_client"
        try:
            while True:
                item = await queue.get()
                if item is None:
                    return
                deliver_at, data = item
                wait = deliver_at - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                await self._write(writer, data, proxy._flows[direction], name)
        except (OSError, ConnectionError):
            return

    async def _write(self, writer: asyncio.StreamWriter, data: bytes, flow: Flow, name: str) -> None:
        proxy = self.proxy
        step = flow.max_fragment or len(data)
        if flow.bytes_per_s:
            step = min(step, max(1, int(flow.bytes_per_s / 50)))  # pace in ~20 ms slices
        pos = pieces = 0
        while pos < len(data):
            await proxy._open.wait()
            size = proxy._rng.randint(1, step) if flow.max_fragment else step
            piece = data[pos:pos + size]
            writer.write(piece)
            await writer.drain()
            pos += len(piece)
            pieces += 1
            proxy.stats.bytes[name] += len(piece)
            proxy.stats.writes[name] += 1
            if flow.bytes_per_s:
                await asyncio.sleep(len(piece) / flow.bytes_per_s)
            elif flow.max_fragment and pos < len(data):
                # Separate writes reach the peer as separate reads only if it has time to
                # read between them: pause now and then.
                await asyncio.sleep(0.001 if pieces % 8 == 0 else 0)

    def abort(self, graceful: bool = False, reset: bool = False) -> None:
        for task in self.tasks:
            if task is not asyncio.current_task():
                task.cancel()
        for writer in (self.client_w, self.broker_w):
            if writer is None:
                continue
            if reset:
                _set_linger_zero(writer)
            if graceful and not reset:
                writer.close()
            else:
                writer.transport.abort()
        self.proxy._links.discard(self)


def _nodelay(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _set_linger_zero(writer: asyncio.StreamWriter) -> None:
    """Closing with SO_LINGER (on, 0 s) sends a TCP RST instead of a FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


# ---------------------------------------------------------------- the proxy


class FaultyProxy:
    """A TCP proxy to ``target_host:target_port`` listening on ``listen_port`` (0: free).

    Thread-safe: the fault switches may be called from any thread.

    Example::

        proxy = FaultyProxy("127.0.0.1", kafka_broker.port).start()
        with AdminClient({"bootstrap.servers": proxy.bootstrap}) as a:
            with proxy.latency(50):                     # the bootstrap connection goes through the proxy
                assert "orders" in a.list_topics()
        proxy.close()
    """

    def __init__(self, target_host: str, target_port: int, listen_port: int = 0, *,
                 host: str = "127.0.0.1", seed: int | None = None) -> None:
        self.target_host, self.target_port = target_host, target_port
        self.host = host
        self._listen_port = listen_port
        self._flows = {TO_BROKER: Flow(), TO_CLIENT: Flow()}
        self._rng = random.Random(seed)
        self._refusing = False
        self._links: set[_Link] = set()
        self._server: asyncio.AbstractServer | None = None
        self._open = asyncio.Event()  # cleared: a black hole (binds to the proxies' loop on first use)
        self._open.set()
        self.stats = ProxyStats()
        self._loop = _Loop.get()

    def __repr__(self) -> str:
        return f"<FaultyProxy {self.bootstrap} -> {self.target_host}:{self.target_port}>"

    # -- lifecycle

    def start(self) -> FaultyProxy:
        """Start listening (idempotent); returns the proxy.

        Example::

            proxy = FaultyProxy("127.0.0.1", kafka_broker.port)
            assert proxy.start() is proxy.start()           # idempotent
            proxy.close()
        """
        if self._server is None:
            self._loop.run(self._start())
        return self

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._accept, self.host, self._listen_port, reuse_address=True)
        self._listen_port = self._server.sockets[0].getsockname()[1]

    @property
    def port(self) -> int:
        """The port the proxy listens on.

        Example::

            proxy = FaultyProxy("127.0.0.1", kafka_broker.port).start()
            assert proxy.port > 0                           # listen_port=0 picked a free one
            proxy.close()
        """
        return self._listen_port

    @property
    def bootstrap(self) -> str:
        """``host:port`` clients connect to (the proxy, not the broker).

        Example::

            proxy = FaultyProxy("127.0.0.1", kafka_broker.port).start()
            assert proxy.bootstrap == f"127.0.0.1:{proxy.port}"
            proxy.close()
        """
        return f"{self.host}:{self._listen_port}"

    def close(self) -> None:
        """Stop listening and reset every connection.

        Example::

            proxy = FaultyProxy("127.0.0.1", kafka_broker.port).start()
            proxy.close()                                   # every connection is reset
        """
        if self._server is not None:
            self._loop.run(self._close())

    async def _close(self) -> None:
        assert self._server is not None
        self._server.close()
        for link in list(self._links):
            link.abort(reset=True)
        self._server = None

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.stats.connections += 1
        link = _Link(self, reader, writer)
        if self._refusing:
            self.stats.resets += 1
            link.abort(reset=True)
            return
        self._links.add(link)
        try:
            await link.run()
        finally:
            self._links.discard(link)

    # -- switches

    def _set(self, direction: Direction, **changes: Any) -> dict[Direction, dict[str, Any]]:
        before = {}
        for d in (TO_BROKER, TO_CLIENT):
            if d in direction:
                flow = self._flows[d]
                before[d] = {k: getattr(flow, k) for k in changes}
                for k, v in changes.items():
                    setattr(flow, k, v)
        return before

    def _scoped(self, before: dict[Direction, dict[str, Any]]) -> Fault:
        def undo() -> None:
            for d, values in before.items():
                for k, v in values.items():
                    setattr(self._flows[d], k, v)
        return Fault(self, undo)

    def latency(self, ms: float, jitter_ms: float = 0.0, direction: Direction = BOTH) -> Fault:
        """Delay every chunk by ``ms`` (+- ``jitter_ms``) in ``direction``; order is kept.

        Example::

            proxy = FaultyProxy("127.0.0.1", kafka_broker.port).start()
            with proxy.latency(20, jitter_ms=5):            # each chunk 15-25 ms late, order kept
                with AdminClient({"bootstrap.servers": proxy.bootstrap}) as a:
                    a.list_topics()
            proxy.close()
        """
        return self._scoped(self._set(direction, latency_s=ms / 1000.0, jitter_s=jitter_ms / 1000.0))

    def bandwidth(self, bytes_per_s: float, direction: Direction = BOTH) -> Fault:
        """Pace ``direction`` at about ``bytes_per_s`` (0: unlimited).

        Example::

            proxy = FaultyProxy("127.0.0.1", kafka_broker.port).start()
            with proxy.bandwidth(64_000, Direction.TO_CLIENT):   # ~64 kB/s towards clients
                pass
            proxy.close()
        """
        return self._scoped(self._set(direction, bytes_per_s=float(bytes_per_s)))

    def partial_writes(self, max_fragment: int = 3, direction: Direction = BOTH) -> Fault:
        """Deliver ``direction``'s bytes in fragments of 1..``max_fragment`` bytes.

        Example::

            proxy = FaultyProxy("127.0.0.1", kafka_broker.port).start()
            with proxy.partial_writes(max_fragment=2):      # responses arrive 1-2 bytes at a time
                with AdminClient({"bootstrap.servers": proxy.bootstrap}) as a:
                    assert "orders" in a.list_topics()
            proxy.close()
        """
        return self._scoped(self._set(direction, max_fragment=int(max_fragment)))

    def corrupt(self, rate: float, direction: Direction = TO_CLIENT, *,
                records_only: bool = False) -> Fault:
        """Flip bytes with probability ``rate`` each; ``records_only``: only bytes that
        record batch CRCs cover, in Fetch / ShareFetch responses (framing survives).

        Example::

            proxy = FaultyProxy("127.0.0.1", kafka_broker.port, seed=7).start()
            with proxy.corrupt(0.001, records_only=True):   # CRC errors, not protocol errors
                pass
            proxy.close()
        """
        return self._scoped(self._set(direction, corrupt_rate=float(rate), records_only=records_only))

    def black_hole(self) -> Fault:
        """Accept connections but forward nothing, either way, until undone (the end of
        the ``with`` block, ``.undo()`` or :meth:`heal`); what was sent meanwhile flows
        afterwards.

        Example::

            proxy = FaultyProxy("127.0.0.1", kafka_broker.port).start()
            fault = proxy.black_hole()                      # connections stay open; nothing passes
            fault.undo()
            proxy.close()
        """
        self._loop.call(self._open.clear)
        return Fault(self, lambda: self._loop.call(self._open.set))

    def reset(self) -> int:
        """Reset (TCP RST) every open connection now; returns how many.

        Example::

            proxy = FaultyProxy("127.0.0.1", kafka_broker.port).start()
            with AdminClient({"bootstrap.servers": proxy.bootstrap}) as a:
                a.list_topics()
                print(proxy.reset(), "connections reset")   # the client reconnects on its next call
            proxy.close()
        """
        async def run() -> int:
            links = list(self._links)
            for link in links:
                link.abort(reset=True)
            self.stats.resets += len(links)
            return len(links)
        return int(self._loop.run(run()))

    def refuse_new(self) -> Fault:
        """Reset connections as they arrive (and every open one now) until undone.

        Example::

            proxy = FaultyProxy("127.0.0.1", kafka_broker.port).start()
            with proxy.refuse_new():                        # new connections are reset as they arrive
                pass
            proxy.close()
        """
        self._refusing = True
        self.reset()

        def undo() -> None:
            self._refusing = False
        return Fault(self, undo)

    def heal(self) -> None:
        """Clear every fault (open connections are kept).

        Example::

            proxy = FaultyProxy("127.0.0.1", kafka_broker.port).start()
            proxy.latency(100)
            proxy.refuse_new()
            proxy.heal()                                    # both undone
            proxy.close()
        """
        self._refusing = False
        self._flows[TO_BROKER] = Flow()
        self._flows[TO_CLIENT] = Flow()
        if self._server is not None:
            self._loop.call(self._open.set)

    @property
    def open_connections(self) -> int:
        """How many client connections the proxy holds now.

        Example::

            proxy = FaultyProxy("127.0.0.1", kafka_broker.port).start()
            with AdminClient({"bootstrap.servers": proxy.bootstrap}) as a:
                a.list_topics()
                assert proxy.open_connections >= 1
            proxy.close()
        """
        return len(self._links)


class NetworkFaults:
    """The proxies of several brokers, switched together (``faults[node_id]`` for one).

    Example::

        faults = NetworkFaults({1: FaultyProxy("127.0.0.1", kafka_broker.port).start()})
        with faults.latency(20):
            pass
        faults[1].close()
    """

    def __init__(self, proxies: dict[int, FaultyProxy]) -> None:
        self.proxies = proxies

    def __getitem__(self, node_id: int) -> FaultyProxy:
        return self.proxies[node_id]

    def __iter__(self) -> Iterator[FaultyProxy]:
        return iter(self.proxies.values())

    @property
    def bootstrap(self) -> str:
        """Bootstrap through the proxies: every connection then goes through them.

        Example::

            with AdminClient({"bootstrap.servers": network_faults.bootstrap}) as a:
                assert "orders" in a.list_topics()
        """
        return ",".join(p.bootstrap for p in self.proxies.values())

    def _all(self, name: str, *args: Any, **kwargs: Any) -> Fault:
        faults = [getattr(proxy, name)(*args, **kwargs) for proxy in self.proxies.values()]

        def undo() -> None:
            for fault in reversed(faults):
                fault.undo()
        return Fault(self, undo)

    def latency(self, ms: float, jitter_ms: float = 0.0, direction: Direction = BOTH) -> Fault:
        """Delay every chunk by ``ms`` (plus up to ``jitter_ms``) in ``direction``; returns the fault.

        Example::

            network_faults.latency(200, jitter_ms=50)
        """
        return self._all("latency", ms, jitter_ms, direction)

    def bandwidth(self, bytes_per_s: float, direction: Direction = BOTH) -> Fault:
        """Limit every connection to ``bytes_per_s`` in ``direction``; returns the fault (``.undo()`` it, or use it in a ``with`` block).

        Example::

            with network_faults.bandwidth(64_000):
                producer.send("orders", b"x" * 100_000).result(30)
        """
        return self._all("bandwidth", bytes_per_s, direction)

    def partial_writes(self, max_fragment: int = 3, direction: Direction = BOTH) -> Fault:
        """Forward bytes in pieces of at most ``max_fragment`` bytes; returns the fault.

        Example::

            with network_faults.partial_writes(max_fragment=1):
                with AdminClient({"bootstrap.servers": network_faults.bootstrap}) as a:
                    a.list_topics()
        """
        return self._all("partial_writes", max_fragment, direction)

    def corrupt(self, rate: float, direction: Direction = TO_CLIENT, *,
                records_only: bool = False) -> Fault:
        """Flip bytes at ``rate`` (0..1) in ``direction`` (``records_only``: only inside record batches); returns the fault.

        Example::

            with network_faults.corrupt(0.01, Direction.TO_CLIENT, records_only=True):
                pass
        """
        return self._all("corrupt", rate, direction, records_only=records_only)

    def black_hole(self) -> Fault:
        """Drop every byte both ways while keeping connections open; returns the fault.

        Example::

            with network_faults.black_hole():               # every node unreachable, connections open
                pass
        """
        return self._all("black_hole")

    def refuse_new(self) -> Fault:
        """Refuse new connections (existing ones keep working); returns the fault.

        Example::

            fault = network_faults.refuse_new()
            fault.undo()
        """
        return self._all("refuse_new")

    def reset(self) -> int:
        """Reset (RST) every open connection; how many were reset.

        Example::

            with AdminClient({"bootstrap.servers": network_faults.bootstrap}) as a:
                a.list_topics()
                assert network_faults.reset() >= 1
        """
        return sum(p.reset() for p in self.proxies.values())

    def heal(self) -> None:
        """Remove every fault of every proxy.

        Example::

            network_faults.latency(100)
            network_faults.heal()
        """
        for proxy in self.proxies.values():
            proxy.heal()
