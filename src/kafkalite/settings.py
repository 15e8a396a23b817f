"""How user settings become a client's :class:`~kafkalite.config.Config`: the one entry
point, and every check between settings, registered here in one table.

:func:`resolve` applies the schema (:func:`kafkalite.config.parse`: names, types,
ranges, defaults, refusals with reasons, required settings), then runs the checks of
:data:`CHECKS` for the client kind in order, then gives ``client.id`` Java's default. The
table is complete when this module is imported, so ``resolve(kind, ...)`` runs the same
checks whatever else the process imported (``tests/unit/test_settings_checks.py`` proves
it in a fresh interpreter).

A check is a plain function ``Config -> Config``: it raises a
:class:`~kafkalite.errors.ConfigError` naming the setting, or returns the settings,
possibly adjusted (the producer turns a defaulted idempotence off when ``acks`` contradicts
it, as Java does). Each lives beside what it knows about:

- ``net/tls.py``: the ``ssl.*`` stores and keys load (PEM, PKCS#12 via ``net/pkcs12.py``);
- ``net/sasl.py``: the SASL mechanism has its credentials, token source or Kerberos login
  (``net/oauth.py``, ``net/kerberos.py``);
- ``producer/settings.py``: idempotence, ``transactional.id``, delivery timeout, KIP-939;
- ``consumer/settings.py``: group membership and protocol settings, assignors.

The share consumer and the admin client have no rules beyond the schema and security.
To add a check: write it beside its subject and add it to :data:`CHECKS` here.

Example::

    from kafkalite.settings import resolve
    cfg = resolve("consumer", {"bootstrap.servers": "127.0.0.1:9092", "group.id": "g"},
                  auto_offset_reset="earliest")
    cfg["group.id"], cfg.client_id     # ('g', 'consumer-g-1')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from kafkalite.config import (
    ADMIN,
    CONSUMER,
    PRODUCER,
    SHARE_CONSUMER,
    Config,
    default_client_id,
    parse,
)
from kafkalite.consumer import settings as consumer_rules
from kafkalite.net.sasl import check_sasl_settings
from kafkalite.net.tls import check_tls_settings
from kafkalite.producer import settings as producer_rules

Check = Callable[[Config], Config]

#: TLS stores and SASL logins, checked for every client kind first (as Java's clients
#: load their key stores and JAAS config when built).
SECURITY: tuple[Check, ...] = (check_tls_settings, check_sasl_settings)

#: Every check between settings, per client kind, in the order they run.
CHECKS: Mapping[str, tuple[Check, ...]] = MappingProxyType({
    PRODUCER: (*SECURITY, producer_rules.check_idempotence, producer_rules.check_delivery_timeout,
               producer_rules.check_two_phase_commit),
    CONSUMER: (*SECURITY, consumer_rules.check_group_settings, consumer_rules.check_assignors),
    SHARE_CONSUMER: SECURITY,
    ADMIN: SECURITY,
})


def resolve(client: str, settings: Mapping[str, Any] | None = None, **kwargs: Any) -> Config:
    """Validate user settings for ``client`` ('producer', 'consumer', 'admin', 'share_consumer').

    ``settings`` is a dict with Java names or aliases; keyword arguments use aliases.
    Raises :class:`~kafkalite.errors.ConfigError` (or, for a share consumer without a
    group, :class:`~kafkalite.errors.InvalidGroupIdError`) naming the setting for anything
    unknown, invalid or contradictory.
    """
    cfg = parse(client, settings, **kwargs)
    for check in CHECKS[client]:
        cfg = check(cfg)
    if not cfg["client.id"]:
        cfg = cfg.replace(**{"client.id": default_client_id(cfg)})
    return cfg
