"""Cross-setting rules of the consumer (plain ``Config -> Config`` functions).

:data:`CONSUMER_RULES` runs them, after the schema and the security checks, whenever a
consumer's settings are resolved (:mod:`kafkalite.settings`). They follow the Java
client's ``ConsumerConfig`` and ``GroupRebalanceConfig``:

* ``group.instance.id`` (static membership, KIP-345) needs ``group.id``;
* with ``group.protocol=consumer`` (KIP-848) the broker decides the session, the
  heartbeat interval and the assignment: setting them is an error naming the
  replacement; ``group.remote.assignor`` needs that protocol;
* ``heartbeat.interval.ms`` must be lower than ``session.timeout.ms`` (classic);
* a group's ``partition.assignment.strategy`` names assignors that exist (loaded now,
  as Java instantiates them in the constructor).
"""

from __future__ import annotations

from kafkalite.config import CONSUMER, Config
from kafkalite.errors import ConfigError
from kafkalite.settings import ClientRules


def check_group_settings(cfg: Config) -> Config:
    if cfg["group.instance.id"] is not None and not cfg["group.id"]:
        raise ConfigError("setting 'group.instance.id' needs 'group.id' (static membership is group membership)")
    if cfg["group.protocol"] == "consumer":
        for name in ("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy"):
            if cfg.is_set(name):
                raise ConfigError(
                    f"setting '{name}' is not used with group.protocol=consumer (KIP-848): the broker "
                    "decides it; remove it or use group.protocol=classic"
                    + ("; choose a server-side assignor with 'group.remote.assignor'"
                       if name == "partition.assignment.strategy" else ""))
    elif cfg.is_set("group.remote.assignor"):
        raise ConfigError("setting 'group.remote.assignor' needs group.protocol=consumer (KIP-848)")
    if cfg["group.id"] is not None and not cfg["group.id"].strip():
        raise ConfigError("setting 'group.id' must not be empty (leave it unset for no group)")
    if cfg["heartbeat.interval.ms"] >= cfg["session.timeout.ms"] and cfg["group.protocol"] == "classic":
        raise ConfigError(
            f"setting 'heartbeat.interval.ms' ({cfg['heartbeat.interval.ms']}) must be lower than "
            f"'session.timeout.ms' ({cfg['session.timeout.ms']})")
    if cfg["auto.offset.reset"] == "by_duration":
        raise ConfigError("auto.offset.reset=by_duration is not supported yet; use earliest, latest or none")
    return cfg


def check_assignors(cfg: Config) -> Config:
    if cfg["group.id"] and cfg["group.protocol"] == "classic":
        # Imported here: resolving an admin's or a producer's settings need not load the
        # assignors (they are only needed for a consumer in a classic group).
        from kafkalite.consumer.assignors import assignors_from_config

        assignors_from_config(cfg["partition.assignment.strategy"])
    return cfg


#: The consumer's settings: ``CONSUMER_RULES.resolve(config, **settings)``.
CONSUMER_RULES = ClientRules(CONSUMER, (check_group_settings, check_assignors))
