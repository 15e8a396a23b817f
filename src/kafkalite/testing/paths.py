"""Where the harness keeps downloaded jars and the state of running brokers.

Both follow the XDG base directory spec and can be overridden by environment:

- jars: ``$KAFKALITE_CACHE_DIR`` or ``$XDG_CACHE_HOME/kafkalite`` (``~/.cache/kafkalite``);
  Kafka ``<version>`` lives in ``<cache>/kafka/<version>/``.
- state: ``$KAFKALITE_STATE_DIR`` or ``$XDG_STATE_HOME/kafkalite``
  (``~/.local/state/kafkalite``): the registry of started processes and the brokers
  ``python -m kafkalite.testing up`` left running.

>>> cache_dir({"KAFKALITE_CACHE_DIR": "/tmp/kl"})
PosixPath('/tmp/kl')
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """The root of kafkalite's download cache."""
    env = os.environ if env is None else env
    if env.get("KAFKALITE_CACHE_DIR"):
        return Path(env["KAFKALITE_CACHE_DIR"]).expanduser()
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "kafkalite"


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """The root of kafkalite's state (process registry, detached brokers)."""
    env = os.environ if env is None else env
    if env.get("KAFKALITE_STATE_DIR"):
        return Path(env["KAFKALITE_STATE_DIR"]).expanduser()
    base = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base).expanduser() / "kafkalite"
