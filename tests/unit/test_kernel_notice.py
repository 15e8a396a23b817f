"""Without the C kernels the package says so once, at INFO on the ``kafkalite`` logger,
naming the speed lost and how to get them; with them, or when the user chose the
pure-Python kernels, it says nothing.

Each case runs in a fresh interpreter: the notice is given when ``record_codec`` is
first imported. A missing extension is made the way a wheel-less install without a
compiler has it: ``import kafkalite._speedups`` raises ``ImportError``.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kafkalite.protocol.record_codec import PURE_PYTHON_COST, c_impl

# As in test_records_codec.py: CI builds the extension; a KAFKALITE_NO_EXTENSIONS
# install has only the first case to show.
needs_c = pytest.mark.skipif(c_impl is None, reason="kafkalite._speedups is not built")

# Imports every module that uses the kernels (the producer's append path, the record
# readers and builders, the consumer), then prints what the kafkalite logger got.
PROGRAM = """
import logging, sys
if sys.argv[1] == "missing":
    sys.modules["kafkalite._speedups"] = None  # import raises ImportError
logging.basicConfig(level=logging.DEBUG, format="%(name)s|%(levelname)s|%(message)s",
                    stream=sys.stdout)
import kafkalite
from kafkalite import Consumer, Producer
import kafkalite.producer.append_kernel
import kafkalite.protocol.records
import kafkalite.protocol.record_builder
import kafkalite.consumer.core
from kafkalite.protocol import record_codec
print("IMPLEMENTATION=" + record_codec.IMPLEMENTATION)
"""


def run(mode: str, **env: str) -> list[str]:
    environment = {k: v for k, v in os.environ.items() if k != "KAFKALITE_PURE_PYTHON"}
    environment.update(env)
    done = subprocess.run([sys.executable, "-c", PROGRAM, mode], env=environment,
                          capture_output=True, text=True, timeout=120, check=True)
    return done.stdout.splitlines()


def notices(lines: list[str]) -> list[str]:
    return [line for line in lines if "C kernels" in line]


def test_missing_kernels_are_announced_once_at_info_with_the_cost_and_the_fix():
    lines = run("missing")
    assert "IMPLEMENTATION=python" in lines
    [notice] = notices(lines)
    logger, level, message = notice.split("|", 2)
    assert (logger, level) == ("kafkalite", "INFO")
    assert PURE_PYTHON_COST in message
    assert "387k" in message and "2.13M" in message and "560k" in message and "2.85M" in message
    assert "kafkalite._speedups" in message  # why: the import that failed
    assert "pip install --only-binary kafkalite kafkalite" in message  # a wheel
    assert "C compiler" in message  # or building it


@needs_c
def test_nothing_is_said_when_the_c_kernels_are_active():
    lines = run("present")
    assert "IMPLEMENTATION=c" in lines
    assert notices(lines) == []


@needs_c
def test_choosing_the_pure_python_kernels_is_not_announced():
    lines = run("present", KAFKALITE_PURE_PYTHON="1")
    assert "IMPLEMENTATION=python" in lines
    assert notices(lines) == []
