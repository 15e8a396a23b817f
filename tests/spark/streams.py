"""Starting a streaming query in a test, surviving Spark's fixed start-up timeout.

When a query starts, Spark's driver starts one Python process for a Python data source's
stream (PythonStreamingSourceRunner, via PythonWorkerFactory.createSimpleWorker) and waits
a fixed 10 s for it to connect back: no setting changes that (Spark 4.0-4.3; the pooled
workers have 60 s). On a 2-core machine at ten times its cores in load, starting that
interpreter and importing pyarrow and pyspark took longer, and the query died while
"Initializing sources" with "Python worker failed to connect back" before reading
anything. An application's supervisor starts such a query again from its checkpoint;
:func:`started` does that, for this one failure only, so a test still fails on any other.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

#: Spark's message when the source's Python process did not connect back in time.
WORKER_DID_NOT_CONNECT_BACK = "Python worker failed to connect back"
#: Status messages before the sources exist ("Initializing StreamExecution", then
#: "Initializing sources" while the Python process starts).
INITIALIZING = "Initializing"


def started(start: Callable[[], Any], *, attempts: int = 3, timeout: float = 300) -> Any:
    """``start()`` a streaming query and wait until its sources are initialised.

    A query that died while initialising because its source's Python process did not
    connect back in time (see the module docstring) is started again, up to ``attempts``
    times in all; any other outcome (running, finished, failed otherwise) is returned
    for the test to check.

    Example::

        query = started(lambda: df.writeStream.format("parquet")...start())
    """
    for attempt in range(1, attempts + 1):
        query = start()
        deadline = time.monotonic() + timeout
        while query.isActive and query.status["message"].startswith(INITIALIZING):
            if time.monotonic() > deadline:
                raise AssertionError(f"the query was still initialising its sources after {timeout} s")
            time.sleep(0.1)
        error = query.exception()
        if error is None or WORKER_DID_NOT_CONNECT_BACK not in _text(error) or attempt == attempts:
            return query
        log.warning("attempt %d: the query's source did not start (%s); starting it again", attempt,
                    WORKER_DID_NOT_CONNECT_BACK)
    raise AssertionError("unreachable")


def _text(error: Any) -> str:
    """A StreamingQueryException's message with its cause's (where PySpark keeps it)."""
    parts = [str(error)]
    for name in ("desc", "stackTrace", "_desc", "_stackTrace"):
        value = getattr(error, name, None)
        if isinstance(value, str):
            parts.append(value)
    return "\n".join(parts)
