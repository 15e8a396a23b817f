"""Cross-setting rules of the producer (plain ``Config -> Config`` functions).

:data:`PRODUCER_RULES` runs them, after the schema and the security checks, whenever a
producer's settings are resolved (:mod:`kafkalite.settings`). They follow the Java
client's ``ProducerConfig``:

* idempotence (on by default) needs ``acks=all``, ``retries`` > 0 and at most 5
  requests in flight per connection. When the user set ``enable.idempotence=true``
  explicitly, a contradiction is a :class:`~kafkalite.errors.ConfigError` naming the
  setting; when idempotence was only the default, it is silently turned off;
* ``transactional.id`` needs idempotence;
* ``delivery.timeout.ms`` must be at least ``linger.ms + request.timeout.ms``: an
  error when the user set it, raised to that sum (as Java does) when defaulted;
* ``transaction.two.phase.commit.enable=true`` (KIP-939) is refused: kafkalite does not
  implement two-phase commit, and accepting the setting would silently give ordinary
  transactions that the broker aborts after ``transaction.timeout.ms``.
"""

from __future__ import annotations

import logging

from kafkalite.config import PRODUCER, Config, acks_value
from kafkalite.errors import ConfigError
from kafkalite.settings import ClientRules

log = logging.getLogger("kafkalite.producer")

MAX_IN_FLIGHT_FOR_IDEMPOTENCE = 5


def check_idempotence(cfg: Config) -> Config:
    explicit = cfg.is_set("enable.idempotence")
    enabled = cfg["enable.idempotence"]
    if enabled:
        problems = []
        if cfg["retries"] == 0:
            problems.append(("retries", "must be > 0 for the idempotent producer"))
        if acks_value(cfg) != -1:
            problems.append(("acks", "must be 'all' for the idempotent producer (otherwise idempotence "
                                     "cannot be guaranteed)"))
        if cfg["max.in.flight.requests.per.connection"] > MAX_IN_FLIGHT_FOR_IDEMPOTENCE:
            problems.append(("max.in.flight.requests.per.connection",
                             f"must be at most {MAX_IN_FLIGHT_FOR_IDEMPOTENCE} for the idempotent producer"))
        if problems:
            if explicit:
                name, why = problems[0]
                raise ConfigError(
                    f"setting '{name}' = {cfg[name]!r} contradicts enable.idempotence=true: it {why}; "
                    f"change '{name}' or set enable.idempotence=false"
                )
            log.info("idempotence disabled because %s", ", ".join(f"{n}={cfg[n]!r}" for n, _ in problems))
            cfg = cfg.replace(**{"enable.idempotence": False})
            enabled = False
    txn_id = cfg["transactional.id"]
    if txn_id is not None:
        if not txn_id.strip():
            raise ConfigError("setting 'transactional.id' must not be empty")
        if not enabled:
            raise ConfigError(
                "setting 'transactional.id' needs the idempotent producer, but enable.idempotence is off"
                + ("" if explicit else " (acks, retries or max.in.flight.requests.per.connection contradict it)")
            )
    return cfg


def check_delivery_timeout(cfg: Config) -> Config:
    minimum = cfg["linger.ms"] + cfg["request.timeout.ms"]
    if cfg["delivery.timeout.ms"] < minimum:
        if cfg.is_set("delivery.timeout.ms"):
            raise ConfigError(
                f"setting 'delivery.timeout.ms' = {cfg['delivery.timeout.ms']} must be at least "
                f"linger.ms + request.timeout.ms = {minimum}"
            )
        log.warning("delivery.timeout.ms raised to linger.ms + request.timeout.ms = %d", minimum)
        cfg = cfg.replace(**{"delivery.timeout.ms": minimum})
    return cfg


def check_two_phase_commit(cfg: Config) -> Config:
    if cfg["transaction.two.phase.commit.enable"]:
        raise ConfigError(
            "setting 'transaction.two.phase.commit.enable' = true is not supported: kafkalite does not "
            "implement KIP-939 two-phase commit (prepareTransaction / completeTransaction with an "
            "external transaction coordinator); without it the broker would abort prepared "
            "transactions after transaction.timeout.ms. Leave it false"
        )
    return cfg


#: The producer's settings: ``PRODUCER_RULES.resolve(config, **settings)``.
PRODUCER_RULES = ClientRules(PRODUCER, (check_idempotence, check_delivery_timeout, check_two_phase_commit))
