"""A clear error when a Spark task's Python lacks kafkalite (issue 12, "Bad input").

The driver looks ``format("kafkalite")`` up and plans the query in its own Python; the
reader or writer it builds is pickled (cloudpickle) and sent with every task to the
executors' Python workers, which import ``pyspark_kafkalite`` to unpickle it. Where an
executor's Python lacks kafkalite (installed on the driver's node only, or
``PYSPARK_PYTHON`` naming another interpreter there), that import fails inside Spark's
worker with a bare ``ModuleNotFoundError: No module named 'pyspark_kafkalite'`` that
says neither where nor what to do.

:class:`ShippedToTasks` makes the source's objects unpickle through
:func:`load_in_task`, a function pickled *by value* (its code travels with the task,
so it runs where kafkalite cannot be imported): it imports the class and, when that
fails, raises a ``ModuleNotFoundError`` naming the interpreter, the host, the missing
module and the two fixes (install on every node, or ship a venv with
``spark.archives``); an executor with another kafkalite version than the driver's gets
an ``ImportError`` naming both. Spark fails the job with that text on the driver after the first
task's attempts (``spark.task.maxFailures``, each failing at once). Nothing the Python
data source API runs before the tasks can see the executors' interpreters, so the
first task is the earliest point.

Where the *driver's* Python (or a Spark Connect server's) lacks kafkalite, Spark's own
lookup fails first with ``[DATA_SOURCE_NOT_FOUND] Failed to find the data source:
kafkalite``: no kafkalite code runs there to say more (docs/spark.md says what to do).
"""

from __future__ import annotations

from typing import Any

__all__ = ["ShippedToTasks", "load_in_task"]

# Everything load_in_task uses is inside it: a global of this module would be pickled
# by reference, and unpickling it would import pyspark_kafkalite, the very import that
# fails on the executor.


def load_in_task(module: str, qualname: str, state_bytes: bytes, driver_version: str | None = None) -> Any:
    """Rebuild a pickled data source object; a clear error where kafkalite is missing.

    The state comes pickled on its own: its values (the options objects ...) are
    kafkalite classes too, and unpickling them before this check would fail first.
    """
    import importlib
    import pickle
    import socket
    import sys

    try:
        target: Any = importlib.import_module(module)
    except ImportError as exc:
        missing = exc.name or module
        raise ModuleNotFoundError(
            f'format("kafkalite") cannot run in this Spark task: its Python, {sys.executable} on host '
            f"{socket.gethostname()}, cannot import {missing!r} ({exc}). The driver's Python has kafkalite, this "
            "executor's does not. Install it into that Python on every node (pip install 'kafkalite[spark]'), or "
            "ship a venv with the job: python -m pyspark_kafkalite.pack <venv> kafkalite_env.zip, then "
            "--conf spark.archives=kafkalite_env.zip#environment with PYSPARK_PYTHON=./environment/bin/python "
            '(docs/spark.md, "Running on a cluster").', name=missing) from None
    from kafkalite._version import __version__ as here

    if driver_version is not None and here != driver_version:
        # The pickled state is the driver's version's classes: another version may read it
        # wrongly, or fail somewhere deep in the task.
        raise ImportError(
            f'format("kafkalite") cannot run in this Spark task: its Python, {sys.executable} on host '
            f"{socket.gethostname()}, has kafkalite {here}, the driver's has {driver_version}. Install the "
            f"driver's version on every node (pip install 'kafkalite[spark]=={driver_version}'), or ship the "
            "driver's environment with spark.archives (docs/spark.md, \"Running on a cluster\").",
            name="kafkalite")
    for part in qualname.split("."):
        target = getattr(target, part)
    state = pickle.loads(state_bytes)
    obj = target.__new__(target)
    if hasattr(obj, "__setstate__"):
        obj.__setstate__(state)
    else:
        obj.__dict__.update(state)
    return obj


# Not importable under this name: cloudpickle then ships the function's code itself.
load_in_task.__module__ = "pyspark_kafkalite_task_loader"


class ShippedToTasks:
    """Mixin of the objects Spark pickles to tasks: unpickled through :func:`load_in_task`."""

    def __reduce__(self) -> tuple[Any, tuple[str, str, bytes, str]]:
        from pyspark import cloudpickle

        from kafkalite._version import __version__

        getstate = getattr(self, "__getstate__", None)
        state = getstate() if getstate is not None else dict(self.__dict__)
        if state is None:  # object.__getstate__ of an instance without attributes
            state = {}
        state_bytes: bytes = cloudpickle.dumps(state)  # type: ignore[no-untyped-call]  # untyped in PySpark
        cls = type(self)
        return load_in_task, (cls.__module__, cls.__qualname__, state_bytes, __version__)
