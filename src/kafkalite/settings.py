"""How user settings become a client's :class:`~kafkalite.config.Config`: the one way,
with the checks shared by every client and each client's own.

:meth:`ClientRules.resolve` applies the schema (:func:`kafkalite.config.parse`: names,
types, ranges, defaults, refusals with reasons, required settings), then the security
checks every client runs (:data:`SECURITY`), then the client's own checks, then gives
``client.id`` Java's default. Each client declares its :class:`ClientRules` in its own
settings module, with its checks written beside it:

- ``producer/settings.py`` (``PRODUCER_RULES``): idempotence, ``transactional.id``,
  delivery timeout, KIP-939;
- ``consumer/settings.py`` (``CONSUMER_RULES``): group membership and protocol
  settings, assignors;
- ``share/settings.py`` (``SHARE_CONSUMER_RULES``) and ``admin/settings.py``
  (``ADMIN_RULES``): security only, beyond the schema.

Nothing is registered when a module is imported: a client's rules are complete in the
one object its front resolves with, so they run the same whatever else the process
imported (``tests/unit/test_settings_checks.py`` proves it in a fresh interpreter), and
no module imports every client's rules.

A check is a plain function ``Config -> Config``: it raises a
:class:`~kafkalite.errors.ConfigError` naming the setting, or returns the settings,
possibly adjusted (the producer turns a defaulted idempotence off when ``acks`` contradicts
it, as Java does). To add a check: write it beside its subject and add it to that
client's rules (or to :data:`SECURITY` when every client needs it).

Example::

    from kafkalite.consumer.settings import CONSUMER_RULES
    cfg = CONSUMER_RULES.resolve({"bootstrap.servers": "127.0.0.1:9092", "group.id": "g"},
                                 auto_offset_reset="earliest")
    cfg["group.id"], cfg.client_id     # ('g', 'consumer-g-1')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkalite.config import ALL, Config, default_client_id, parse
from kafkalite.errors import InvalidArgumentError
from kafkalite.net.sasl import check_sasl_settings
from kafkalite.net.tls import check_tls_settings

Check = Callable[[Config], Config]

#: TLS stores and SASL logins, checked for every client kind first (as Java's clients
#: load their key stores and JAAS config when built).
SECURITY: tuple[Check, ...] = (check_tls_settings, check_sasl_settings)


@dataclass(frozen=True)
class ClientRules:
    """One client kind's settings rules: the schema for ``kind``, :data:`SECURITY`, then
    ``checks`` (the client's own, in the order they run).

    Example::

        rules = ClientRules("admin")
        rules.resolve({"bootstrap.servers": "127.0.0.1:9092"}).client_id   # 'adminclient-1'
    """

    kind: str
    checks: tuple[Check, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in ALL:
            raise InvalidArgumentError(f"unknown client kind {self.kind!r} (one of {', '.join(sorted(ALL))})")

    def resolve(self, settings: Mapping[str, Any] | None = None, **kwargs: Any) -> Config:
        """Validate user settings for this client kind.

        ``settings`` is a dict with Java names or aliases; keyword arguments use aliases.
        Raises :class:`~kafkalite.errors.ConfigError` (or, for a share consumer without a
        group, :class:`~kafkalite.errors.InvalidGroupIdError`) naming the setting for
        anything unknown, invalid or contradictory.
        """
        cfg = parse(self.kind, settings, **kwargs)
        for check in (*SECURITY, *self.checks):
            cfg = check(cfg)
        if not cfg["client.id"]:
            cfg = cfg.replace(**{"client.id": default_client_id(cfg)})
        return cfg
