"""Per-partition lag of a streaming query, from its ``StreamingQueryProgress``.

Spark's JVM Kafka source puts ``minOffsetsBehindLatest`` / ``maxOffsetsBehindLatest`` /
``avgOffsetsBehindLatest`` into each progress's ``sources[].metrics``, through the
``ReportsSourceMetrics`` interface. A Python data source cannot: PySpark's streaming
source runner (``pyspark/sql/streaming/python_streaming_source_runner.py``, 4.0 to 4.3)
calls only initialOffset, latestOffset, partitions, commit, prepareForTriggerAvailableNow,
getDefaultReadLimit and reportLatestOffset, and the JVM side
(``PythonMicroBatchStreamBase``) does not implement ``ReportsSourceMetrics``, so
``metrics`` stays empty for every Python source.

What the progress does carry, per source, is ``endOffset`` (where the micro-batch
ended) and, on PySpark >= 4.2, ``latestOffset`` (what the reader's
``reportLatestOffset`` returned: the partitions' end offsets when the batch was
planned). Both are this source's ``{"topic": {"partition": offset}}``, so the lag of
every partition is their difference; :func:`source_lag` computes it, for a dashboard
(e.g. in a ``StreamingQueryListener``) without a consumer group.

Example::

    for topic, parts in source_lag(query.lastProgress).items():
        for partition, behind in parts.items():
            print(topic, partition, behind)
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from typing import Any

from kafkalite.errors import InvalidArgumentError

Lag = dict[str, dict[int, int]]


def _offsets(value: Any) -> dict[str, dict[int, int]] | None:
    """A progress's offsets: a dict, JSON, or (PySpark 4.0.2 / 4.0.3) a dict's repr."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            value = ast.literal_eval(value)
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"not a kafkalite source's offsets: {value!r}")
    return {str(t): {int(p): int(o) for p, o in parts.items()} for t, parts in value.items()}


def _field(source: Any, name: str) -> Any:
    return source.get(name) if isinstance(source, Mapping) else getattr(source, name, None)


def source_lag(progress: Any, source: int = 0) -> Lag:
    """``{topic: {partition: records behind}}`` of one source of a progress report.

    ``progress`` is a ``StreamingQueryProgress`` or its dict (``query.lastProgress``);
    ``source`` the index of the kafkalite source in ``progress.sources``. Empty when
    the progress has no ``latestOffset`` or no micro-batch ended yet. On PySpark 4.0 /
    4.1 Spark knows no latest offset of a Python source beyond the batch it planned:
    empty, or (4.1.4) zeros.
    """
    sources = _field(progress, "sources") or []
    if source >= len(sources):
        return {}
    latest = _offsets(_field(sources[source], "latestOffset"))
    end = _offsets(_field(sources[source], "endOffset"))
    if latest is None or end is None:
        return {}
    out: Lag = {}
    for topic, parts in latest.items():
        for partition, off in parts.items():
            done = end.get(topic, {}).get(partition, 0)
            out.setdefault(topic, {})[partition] = max(0, off - done)
    return out


def lag_summary(lag: Lag) -> dict[str, int | float]:
    """The JVM connector's three numbers from :func:`source_lag`'s answer:
    ``minOffsetsBehindLatest``, ``maxOffsetsBehindLatest``, ``avgOffsetsBehindLatest``."""
    values = [n for parts in lag.values() for n in parts.values()]
    if not values:
        return {}
    return {"minOffsetsBehindLatest": min(values), "maxOffsetsBehindLatest": max(values),
            "avgOffsetsBehindLatest": sum(values) / len(values)}
