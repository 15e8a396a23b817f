"""The admin client: topics, configs, cluster, groups, offsets, ACLs, SCRAM, quotas,
reassignments, log dirs, producers, transactions, share groups.

``kafkalite.AdminClient`` (blocking) and ``kafkalite.aio.AdminClient`` (asyncio) make the
same calls; every public type is importable from here. See docs/admin.md.

Example::

    from kafkalite.admin import AdminClient, NewTopic, ConfigResource, AlterConfigOp
"""

from __future__ import annotations

import importlib
from typing import Any

_TYPES_MODULES = (
    "kafkalite.admin.types",
    "kafkalite.admin.group_types",
    "kafkalite.admin.security_types",
    "kafkalite.admin.ops_types",
    "kafkalite.admin.results",
)

_LAZY = {
    "AdminClient": "kafkalite.admin.admin",
    "AsyncAdminClient": "kafkalite.admin.async_admin",
}


def __getattr__(name: str) -> Any:
    # Lazy, so that `import kafkalite.admin.types` does not load the whole client.
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    for module in _TYPES_MODULES:
        mod = importlib.import_module(module)
        if name in getattr(mod, "__dict__", {}) and not name.startswith("_"):
            value = getattr(mod, name)
            globals()[name] = value
            return value
    # PEP 562: hasattr() and `from ... import` expect AttributeError here.
    raise AttributeError(f"module 'kafkalite.admin' has no attribute {name!r}")
