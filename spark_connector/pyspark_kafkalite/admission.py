"""How much one micro-batch reads: ``maxOffsetsPerTrigger`` and ``maxBytesPerTrigger``.

Plain functions over offsets (no Spark, no broker), used by the stream reader on the
driver. Both limits share a micro-batch across partitions in proportion to their
backlog, as Spark's JVM connector does for ``maxOffsetsPerTrigger``; with both set,
each partition ends at the lower of the two ends.

Bytes are estimated, not measured: a partition's log size (DescribeLogDirs, the bytes
of its record batches as stored, i.e. compressed, with their headers) divided by the
offsets it spans gives the bytes of one offset; a micro-batch takes as many offsets as
fit in its share of ``maxBytesPerTrigger`` at that rate. The estimate is an average
over the partition's whole log: records much larger or smaller than the average at
the read position make a micro-batch larger or smaller than the limit, and a log
whose first records were deleted by ``delete_records`` still counts the deleted
records' bytes until their segment is removed (a lower rate then, never a larger
batch). A micro-batch always reads at least one record, so a record larger than the
limit cannot stop a query (Spark's file source does the same with a file).

Example::

    rate_limit({("t", 0): 0}, {("t", 0): 500}, 100)                 # {("t", 0): 100}
    byte_limit({("t", 0): 0}, {("t", 0): 500}, {("t", 0): 100.0}, 1000)  # {("t", 0): 10}
"""

from __future__ import annotations

from collections.abc import Mapping

TP = tuple[str, int]


def _backlog(start: Mapping[TP, int], latest: Mapping[TP, int]) -> dict[TP, int]:
    return {tp: max(0, latest[tp] - start.get(tp, latest[tp])) for tp in latest}


def rate_limit(start: Mapping[TP, int], latest: Mapping[TP, int], max_rows: int) -> dict[TP, int]:
    """End offsets reading at most ``max_rows`` records, shared in proportion to each
    partition's backlog; the rounding remainder goes to the largest backlogs, so a
    micro-batch never exceeds the limit and every backlogged partition moves."""
    backlog = _backlog(start, latest)
    total = sum(backlog.values())
    if total <= max_rows:
        return dict(latest)
    take = {tp: (max_rows * n) // total for tp, n in backlog.items()}
    left = max_rows - sum(take.values())
    for tp in sorted(backlog, key=lambda t: (take[t] > 0, -backlog[t], t)):
        if left <= 0:
            break
        if backlog[tp] > take[tp]:
            take[tp] += 1
            left -= 1
    return {tp: start.get(tp, end) + take[tp] for tp, end in latest.items()}


def bytes_per_offset(sizes: Mapping[TP, int], earliest: Mapping[TP, int],
                     latest: Mapping[TP, int]) -> dict[TP, float]:
    """Average stored bytes of one offset per partition (log size / offsets in the log);
    partitions with no size or an empty log are left out (unknown)."""
    out: dict[TP, float] = {}
    for tp, end in latest.items():
        span = end - earliest.get(tp, end)
        size = sizes.get(tp, 0)
        if span > 0 and size > 0:
            out[tp] = size / span
    return out


def byte_limit(start: Mapping[TP, int], latest: Mapping[TP, int], rate: Mapping[TP, float],
               max_bytes: int) -> dict[TP, int]:
    """End offsets reading about ``max_bytes`` (see the module doc), shared in proportion
    to each partition's backlog in bytes. A partition whose rate is unknown (``rate``
    has no entry: a log the size report does not cover yet) counts at the largest
    known rate, or, when none is known, moves one record per micro-batch."""
    backlog = _backlog(start, latest)
    if not any(backlog.values()):
        return dict(latest)
    known = [r for tp, r in rate.items() if backlog.get(tp)]
    fallback = max(known) if known else None
    if fallback is None:  # nothing to estimate from: one record per partition, never more
        return {tp: start.get(tp, end) + min(1, backlog[tp]) for tp, end in latest.items()}
    cost = {tp: n * rate.get(tp, fallback) for tp, n in backlog.items()}
    total = sum(cost.values())
    if total <= max_bytes:
        return dict(latest)
    # The same fraction of every backlog: each partition's share of the bytes is its
    # share of the backlog's bytes.
    fraction = max_bytes / total
    take = {tp: min(n, int(n * fraction)) for tp, n in backlog.items()}
    if not any(take.values()):
        largest = max(backlog, key=lambda t: (backlog[t], t))
        take[largest] = 1  # one record larger than the limit: read it alone
    return {tp: start.get(tp, end) + take[tp] for tp, end in latest.items()}


def lowest(*ends: Mapping[TP, int]) -> dict[TP, int]:
    """Per partition, the lowest of several limits' end offsets."""
    out: dict[TP, int] = dict(ends[0])
    for other in ends[1:]:
        for tp, off in other.items():
            out[tp] = min(out.get(tp, off), off)
    return out
