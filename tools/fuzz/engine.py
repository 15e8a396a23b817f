"""The fuzzer's oracle and its worker processes.

Each input is made from ``(seed, index)`` alone (target choice, seed choice and
mutations all come from ``random.Random`` seeded with both), so any finding can be
replayed exactly. For each input the oracle checks:

* **typed errors only**: the decoder returns, or raises a
  :class:`~kafkalite.errors.ProtocolError` (``CorruptRecordsError``,
  ``UnsupportedCodecError`` ... are subclasses); anything else is a crash;
* **no hang**: a per-input limit on CPU time (``ITIMER_PROF``/``SIGPROF`` interrupts
  Python code; CPU rather than wall time, so a busy machine does not make inputs
  "hang", and pytest-timeout keeps its SIGALRM); a ``faulthandler`` watchdog per chunk
  ends a worker stuck in C, and the parent then replays that chunk input by input in a
  subprocess to find the input;
* **bounded allocation**: ``tracemalloc``'s peak during the input, minus what was
  allocated before it, must stay under ``ratio x work + slack`` bytes, where *work* is
  the input's size plus what decompression produced from it (capped by the targets).
  Python objects per decoded element cost a constant factor over the bytes that
  encode them; a length field that allocates before reading costs far more;
* valid seeds (fed unchanged now and then) must decode without any error.

Workers also report the memory they still hold after each chunk, so a cache that grows
with every input (a leak) shows up as growth between the first and the last chunk.
"""

from __future__ import annotations

import faulthandler
import gc
import os
import random
import signal
import time
import traceback
import tracemalloc
from dataclasses import asdict, dataclass, field
from typing import Any

from kafkalite.errors import ProtocolError
from kafkalite.protocol import compression
from tools.fuzz.targets import FAMILY_WEIGHTS, MAX_DECOMPRESSED, Target, all_targets


@dataclass(frozen=True)
class Limits:
    time_s: float = 1.0  # CPU seconds per input
    ratio: float = 128.0  # allowed peak bytes per byte of work
    slack: int = 256 * 1024  # plus this much (a first 64 KiB decompression chunk, small caches)
    chunk_timeout_s: float = 300.0  # a worker silent this long is stuck in C code


class InputTimeout(BaseException):
    """Raised by SIGPROF inside a decoder that used more than the per-input CPU time."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise InputTimeout()


# ---------------------------------------------------------------- decompression accounting

_decompressed = [0]
_real_decompress = compression.decompress


def _counting_decompress(codec: int, data: Any, *, max_size: int | None = None, **kwargs: Any) -> bytes:
    # Callers that rely on the 256 MiB default (the consumer's CompletedFetch) get the
    # targets' cap here, so that the figures are about decoding, not about that cap.
    cap = MAX_DECOMPRESSED if max_size is None else max_size
    try:
        out = _real_decompress(codec, data, max_size=cap, **kwargs)
    except ProtocolError as exc:
        if "decompression limit" in str(exc):
            _decompressed[0] += cap  # it produced up to the cap before refusing
        raise
    _decompressed[0] += len(out)
    return out


def install_counters() -> None:
    """Count decompressed bytes (part of an input's work) wherever decompress is called."""
    compression.decompress = _counting_decompress  # type: ignore[assignment]


# ---------------------------------------------------------------- inputs


def select_targets(pattern: str | None) -> list[Target]:
    targets = all_targets()
    if pattern:
        targets = [t for t in targets if pattern in t.name]
    if not targets:
        raise SystemExit(f"no fuzz target matches {pattern!r}")
    return targets


def _by_family(targets: list[Target]) -> list[tuple[float, list[Target]]]:
    families: dict[str, list[Target]] = {}
    for t in targets:
        families.setdefault(t.family, []).append(t)
    return [(FAMILY_WEIGHTS.get(f, 0.1), ts) for f, ts in sorted(families.items())]


def make_case(seed: int, index: int, families: list[tuple[float, list[Target]]]
              ) -> tuple[Target, bytes, bool, random.Random]:
    """(target, input, whether it is an unchanged seed, the rng its run may use)."""
    rng = random.Random((seed << 40) ^ index)
    total = sum(w for w, _ in families)
    pick = rng.random() * total
    group = families[-1][1]
    for weight, candidates in families:
        pick -= weight
        if pick <= 0:
            group = candidates
            break
    target = group[rng.randrange(len(group))]
    data = target.make_input(rng)
    is_seed = data in target.seeds
    return target, data, is_seed, random.Random(rng.getrandbits(64))


@dataclass
class Case:
    outcome: str  # "ok", "typed:<ErrorClass>", or "crash:<kind>"
    elapsed: float
    peak: int
    work: int
    detail: str = ""
    cpu: float = 0.0  # CPU time of the decoding thread (wall time includes a busy machine's waits)


def run_case(target: Target, data: bytes, is_seed: bool, rng: random.Random, limits: Limits) -> Case:
    """Decode one input under the oracle (tracemalloc must be tracing)."""
    _decompressed[0] = 0
    gc.disable()
    baseline = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    signal.setitimer(signal.ITIMER_PROF, limits.time_s)
    cpu_started = time.thread_time()
    started = time.perf_counter()
    result: Any = None
    outcome, detail = "ok", ""
    try:
        result = target.run(data, rng)
    except InputTimeout:
        outcome, detail = "crash:hang", f"ran past {limits.time_s} s"
    except ProtocolError as exc:
        outcome = f"typed:{type(exc).__name__}"
        if is_seed:
            outcome, detail = "crash:valid-input-rejected", f"{type(exc).__name__}: {exc}"
    except BaseException as exc:  # the point: anything else is a finding
        outcome, detail = f"crash:{type(exc).__name__}", "".join(traceback.format_exception(exc))[-3000:]
    finally:
        elapsed = time.perf_counter() - started
        cpu = time.thread_time() - cpu_started
        signal.setitimer(signal.ITIMER_PROF, 0)
    peak = tracemalloc.get_traced_memory()[1] - baseline
    del result
    gc.enable()
    work = len(data) + _decompressed[0]
    if outcome == "ok" or outcome.startswith("typed:"):
        if cpu > limits.time_s:
            outcome, detail = "crash:slow", f"took {cpu:.3f} s of CPU time"
        elif peak > limits.ratio * work + limits.slack + target.overhead:
            outcome, detail = "crash:allocation", f"peak {peak} bytes for {work} bytes of work"
    return Case(outcome, elapsed, peak, work, detail, cpu)


# ---------------------------------------------------------------- chunks (worker side)


@dataclass
class Extreme:
    value: float = 0.0
    target: str = ""
    index: int = -1
    size: int = 0

    def offer(self, value: float, target: str, index: int, size: int) -> None:
        if value > self.value:
            self.value, self.target, self.index, self.size = value, target, index, size


@dataclass
class ChunkStats:
    inputs: int = 0
    seconds: float = 0.0
    outcomes: dict[str, int] = field(default_factory=dict)
    families: dict[str, int] = field(default_factory=dict)
    crashes: list[dict[str, Any]] = field(default_factory=list)
    longest: Extreme = field(default_factory=Extreme)
    longest_cpu: Extreme = field(default_factory=Extreme)
    peak: Extreme = field(default_factory=Extreme)
    ratio: Extreme = field(default_factory=Extreme)  # peak / work, inputs of >= 1 KiB of work
    retained: int = 0  # traced memory held by the worker after the chunk
    pid: int = 0


_WORKER: dict[str, Any] = {}


def init_worker() -> None:
    """Per process: the CPU-time alarm, the C watchdog's output, tracemalloc, counters."""
    signal.signal(signal.SIGPROF, _on_alarm)
    faulthandler.enable()
    install_counters()
    tracemalloc.start()
    _WORKER["ready"] = True


def uninstall() -> None:
    """Undo :func:`init_worker` (tests that run the oracle in the test process)."""
    signal.signal(signal.SIGPROF, signal.SIG_DFL)
    compression.decompress = _real_decompress  # type: ignore[assignment]
    tracemalloc.stop()
    _WORKER.clear()


def _warm_up(families: list[tuple[float, list[Target]]]) -> None:
    """Build every target's seeds and decode one, untimed: first-use costs (imports,
    seed sampling, caches) are not the decoders' time or memory."""
    rng = random.Random(0)
    for _, group in families:
        for target in group:
            try:
                target.run(target.seeds[0], rng)
            except ProtocolError:
                pass


def run_chunk(seed: int, start: int, count: int, pattern: str | None, limits: Limits,
              progress_fd: int | None = None) -> dict[str, Any]:
    """Run inputs ``start .. start+count`` of run ``seed``; returns :class:`ChunkStats`
    as a dict. ``progress_fd``: write each index there first (used to locate an input
    that kills the process)."""
    if not _WORKER:
        init_worker()
    families = _by_family(select_targets(pattern))
    if _WORKER.get("warm") != pattern:
        _warm_up(families)
        _WORKER["warm"] = pattern
    stats = ChunkStats(pid=os.getpid())
    faulthandler.dump_traceback_later(limits.chunk_timeout_s, exit=True)
    began = time.perf_counter()
    try:
        for index in range(start, start + count):
            if progress_fd is not None:
                os.pwrite(progress_fd, b"%20d\n" % index, 0)
            target, data, is_seed, rng = make_case(seed, index, families)
            case = run_case(target, data, is_seed, rng, limits)
            stats.inputs += 1
            stats.outcomes[case.outcome] = stats.outcomes.get(case.outcome, 0) + 1
            stats.families[target.family] = stats.families.get(target.family, 0) + 1
            stats.longest.offer(case.elapsed, target.name, index, len(data))
            stats.longest_cpu.offer(case.cpu, target.name, index, len(data))
            stats.peak.offer(case.peak, target.name, index, len(data))
            if case.work >= 1024:
                stats.ratio.offer(max(0, case.peak - target.overhead) / case.work, target.name, index, len(data))
            if case.outcome.startswith("crash:") and len(stats.crashes) < 20:
                stats.crashes.append({"seed": seed, "index": index, "target": target.name,
                                      "kind": case.outcome[6:], "size": len(data),
                                      "detail": case.detail, "input": data[:512].hex()})
    finally:
        faulthandler.cancel_dump_traceback_later()
    stats.seconds = time.perf_counter() - began
    gc.collect()
    stats.retained = tracemalloc.get_traced_memory()[0]
    return asdict(stats)


def replay(seed: int, index: int, pattern: str | None, limits: Limits) -> tuple[Target, bytes, Case]:
    """Run one input again (in this process) and return what happened."""
    if not _WORKER:
        init_worker()
    target, data, is_seed, rng = make_case(seed, index, _by_family(select_targets(pattern)))
    return target, data, run_case(target, data, is_seed, rng, limits)
