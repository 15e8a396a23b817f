"""Where Spark's streaming query stands: the start of the next micro-batch, per PySpark.

A plain object (no Spark, no Kafka) fed with the stream reader's calls, so the reader
rate-limits from the offsets Spark will really use as the next batch's start.

What PySpark calls (recorded with ``tools/spark_matrix/trace_calls.py``) differs:

* PySpark >= 4.2 (admission control): ``latestOffset(start, limit)`` names the start.
  A new query calls ``initialOffset()`` twice, before the first ``latestOffset`` and
  again when it runs batch 0; a restart calls neither ``initialOffset`` nor anything
  that names the checkpoint before it re-runs an uncommitted batch.
* PySpark 4.0 / 4.1 (no admission control): ``latestOffset()`` without a start. Spark
  takes every offset it returns as the end of the next batch (a batch runs when it
  differs from the last one). A new query calls ``latestOffset()`` *before*
  ``initialOffset()`` (``MicroBatchExecution.runBatch`` asks for the initial offsets
  only when it plans batch 0); a restart first calls ``partitions(c, c)`` with the
  checkpoint's last offsets (``AcceptsLatestSeenOffset``), then re-runs the last batch
  if it was not committed, then ``latestOffset()``. ``commit(end)`` of a batch comes
  after the ``latestOffset()`` of the next one.

So the start of the next batch is, in this order: the ``start`` Spark passes; else the
end of the last batch Spark planned or the last end this reader returned, whichever
came later; else (a new query) the initial offsets. The initial offsets are resolved
once per reader, so that both ``initialOffset()`` calls of a new query and a
``latestOffset()`` before ``initialOffset()`` agree (``startingOffsets=latest``
resolved twice while a producer writes gave a batch 0 whose start was past its end).

Example::

    ledger = MicroBatchLedger()
    ledger.initial(lambda: {("t", 0): 0})     # resolved once, cached
    ledger.next_start(None)                  # {("t", 0): 0}: a new query starts there
    ledger.returned({("t", 0): 100})          # latestOffset() returned this
    ledger.next_start(None)                  # {("t", 0): 100}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

TP = tuple[str, int]
Offsets = dict[TP, int]


class MicroBatchLedger:
    """The reader's record of Spark's micro-batch positions (one per reader object)."""

    def __init__(self) -> None:
        self._initial: Offsets | None = None
        self._position: Offsets | None = None  # Spark's start of the next batch, as last seen
        self._restarted = False  # Spark named the checkpoint's offsets before any latestOffset
        self._answered = False  # this reader computed an end in latestOffset

    @property
    def position(self) -> Offsets | None:
        """The start of the next micro-batch as far as Spark told this reader, or None."""
        return dict(self._position) if self._position is not None else None

    def initial(self, resolve: Callable[[], Offsets]) -> Offsets:
        """The query's initial offsets, resolved once per reader.

        After a restart (the checkpoint's offsets known) Spark asks for them only to
        re-run an uncommitted batch 0; offsets resolved now may lie past that batch's
        end (``latest`` moved on), so each is capped at the checkpoint's offset.
        """
        if self._initial is None:
            resolved = resolve()
            if self._restarted and self._position is not None:
                known = self._position
                resolved = {tp: min(off, known.get(tp, off)) for tp, off in resolved.items()}
            self._initial = resolved
        return dict(self._initial)

    def next_start(self, spark_start: Mapping[TP, int] | None) -> Offsets | None:
        """The start of the micro-batch ``latestOffset`` plans: Spark's, when it names
        one; else the last position seen; else None (a new query: the initial offsets)."""
        if spark_start is not None:
            return dict(spark_start)
        if self._position is not None:
            return dict(self._position)
        return dict(self._initial) if self._initial is not None else None

    def returned(self, end: Mapping[TP, int]) -> None:
        """``latestOffset`` returned ``end``: without admission control Spark takes it as
        the end of the next batch (the same as the last batch's when nothing is new)."""
        self._answered = True
        self._position = dict(end)

    def planned(self, start: Mapping[TP, int], end: Mapping[TP, int]) -> None:
        """Spark plans the batch ``[start, end)`` (or, with ``start == end`` before any
        ``latestOffset``, names the checkpoint's last offsets after a restart)."""
        if start == end and self._position is None and self._initial is None:
            self._restarted = True
        self._position = dict(end)

    def committed(self, end: Mapping[TP, int]) -> None:
        """Spark committed every batch up to ``end``. That arrives after the next batch's
        ``latestOffset``, so it moves nothing Spark already went past."""
        if self._position is None:
            self._position = dict(end)

    def batch_start(self, start: Mapping[TP, int], end: Mapping[TP, int]) -> Offsets:
        """The start to read a planned batch from.

        A batch that starts at this reader's initial offsets while this reader never
        computed an end is batch 0 planned by an earlier run, re-run after a restart
        with initial offsets resolved anew (Spark keeps no initial offsets for Python
        sources): where those lie past the batch's end, the batch reads nothing there
        and the next batch goes on from the end. A batch 0 this reader planned itself
        keeps its start (a ``startingOffsets`` past a partition's end stays data loss).
        """
        begin = dict(start)
        if not self._answered and self._initial is not None and begin == self._initial:
            for tp, until in end.items():
                if tp in begin and begin[tp] > until:
                    begin[tp] = until
        return begin
