"""``kafkalite configs``: describe and alter configs, quotas and SCRAM credentials.

Options follow ``kafka-configs``: ``--entity-type`` (topics, brokers, broker-loggers,
groups, client-metrics; users, clients, ips for quotas), ``--entity-name`` /
``--entity-default``, ``--describe`` (``--all`` for every config), ``--alter`` with
``--add-config 'k1=v1,k2=[a,b]'`` and ``--delete-config k1,k2``. For users,
``--add-config 'SCRAM-SHA-256=[iterations=8192,password=secret]'`` sets a SCRAM
credential and ``--delete-config SCRAM-SHA-256`` removes it.
"""

from __future__ import annotations

import argparse
from typing import Any

from kafkalite.cli.common import UsageError, admin_client, emit_json, report_failures

_CONFIG_TYPES = {"topics": "topic", "brokers": "broker", "broker-loggers": "broker_logger", "groups": "group",
                 "client-metrics": "client_metrics"}
_QUOTA_TYPES = {"users": "user", "clients": "client-id", "ips": "ip"}
_SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")
# Without --all, show what was set on the entity itself (as kafka-configs does).
_OWN_SOURCES = {
    "topic": ("DYNAMIC_TOPIC_CONFIG",), "broker": ("DYNAMIC_BROKER_CONFIG",),
    "broker_default": ("DYNAMIC_DEFAULT_BROKER_CONFIG",), "group": ("GROUP_CONFIG",),
    "client_metrics": ("CLIENT_METRICS_CONFIG",), "broker_logger": ("DYNAMIC_BROKER_LOGGER_CONFIG", "UNKNOWN"),
}


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("configs", parents=[common], help="describe and alter configs, quotas, SCRAM credentials",
                       description=__doc__)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true", help="show configs")
    action.add_argument("--alter", action="store_true", help="change configs")
    p.add_argument("--entity-type", required=True,
                   help="topics, brokers, broker-loggers, groups, client-metrics, users, clients, ips")
    p.add_argument("--entity-name", help="the topic / broker id / group / ... name")
    p.add_argument("--entity-default", action="store_true", help="the default entity (brokers, users, clients, ips)")
    p.add_argument("--add-config", "--set", dest="add_config", action="append", metavar="K=V[,K=V]",
                   help="configs to set: 'k1=v1,k2=[a,b]' (repeatable)")
    p.add_argument("--delete-config", "--unset", dest="delete_config", action="append", metavar="K[,K]",
                   help="configs to remove (repeatable)")
    p.add_argument("--all", action="store_true", help="describe: every config, defaults included")
    p.add_argument("--validate-only", action="store_true", help="alter: check without changing anything")
    p.set_defaults(handler=run)


def parse_add_config(items: list[str] | None) -> dict[str, str]:
    """Kafka's ``k1=v1,k2=[a,b]`` syntax: commas inside brackets belong to the value."""
    out: dict[str, str] = {}
    for text in items or ():
        depth, start, parts = 0, 0, []
        for i, ch in enumerate(text):
            if ch == "[":
                depth += 1
            elif ch == "]":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(text[start:i])
                start = i + 1
        parts.append(text[start:])
        for part in (p.strip() for p in parts if p.strip()):
            if "=" not in part:
                raise UsageError(f"--add-config entries must be KEY=VALUE, got {part!r}")
            key, value = part.split("=", 1)
            value = value.strip()
            if value.startswith("[") and value.endswith("]"):
                value = value[1:-1]
            out[key.strip()] = value
    return out


def _names(items: list[str] | None) -> list[str]:
    return [n.strip() for text in items or () for n in text.split(",") if n.strip()]


def run(args: argparse.Namespace) -> None:
    etype = args.entity_type.strip().lower()
    if etype in ("topic", "broker", "group", "user", "client", "ip"):
        etype += "s"
    if etype not in _CONFIG_TYPES and etype not in _QUOTA_TYPES:
        raise UsageError(f"unknown --entity-type {args.entity_type!r} (expected one of: "
                         f"{', '.join([*_CONFIG_TYPES, *_QUOTA_TYPES])})")
    if args.entity_default and args.entity_name:
        raise UsageError("give --entity-name or --entity-default, not both")
    if args.alter and not (args.add_config or args.delete_config):
        raise UsageError("--alter needs --add-config and/or --delete-config")
    with admin_client(args) as admin:
        if etype in _QUOTA_TYPES:
            _quotas(admin, args, _QUOTA_TYPES[etype])
        else:
            _configs(admin, args, _CONFIG_TYPES[etype], etype)


def _configs(admin: Any, args: argparse.Namespace, rtype: str, etype: str) -> None:
    from kafkalite.admin import AlterConfigOp, ConfigResource

    if args.entity_default:
        if rtype != "broker":
            raise UsageError("--entity-default is only for brokers among config entities")
        name = ""
    elif args.entity_name is not None:
        name = args.entity_name
    else:
        raise UsageError("--entity-name (or --entity-default) is required")
    resource = ConfigResource(rtype, name)
    label = f"{'default broker' if name == '' else rtype.replace('_', ' ')}{'' if name == '' else ' ' + name}"
    if args.describe:
        result = admin.describe_configs([resource], include_synonyms=True, timeout=args.timeout)
        item = result[resource]
        if item.ok:
            own = _OWN_SOURCES.get("broker_default" if rtype == "broker" and name == "" else rtype, ())
            entries = [e for e in item.value.values() if args.all or e.source.name in own]
            if args.json:
                emit_json({"entity_type": etype, "entity_name": name, "configs": [
                    {"name": e.name, "value": e.value, "source": e.source.name, "sensitive": e.is_sensitive,
                     "read_only": e.is_read_only,
                     "synonyms": [{"name": s.name, "value": s.value, "source": s.source.name} for s in e.synonyms]}
                    for e in entries]})
            else:
                print(f"{'All' if args.all else 'Dynamic'} configs for {label} are:")
                for e in sorted(entries, key=lambda e: e.name):
                    value = "null" if e.value is None else e.value
                    syn = ", ".join(f"{s.source.name}:{s.name}={s.value}" for s in e.synonyms)
                    print(f"  {e.name}={value} sensitive={str(e.is_sensitive).lower()} synonyms={{{syn}}}")
        report_failures(result.errors)
        return
    ops = [AlterConfigOp.set(k, v) for k, v in parse_add_config(args.add_config).items()]
    ops += [AlterConfigOp.delete(k) for k in _names(args.delete_config)]
    result = admin.incremental_alter_configs({resource: ops}, validate_only=args.validate_only, timeout=args.timeout)
    if result[resource].ok:
        if args.json:
            emit_json({"entity_type": etype, "entity_name": name, "altered": True})
        else:
            print(f"{'Validated' if args.validate_only else 'Completed updating'} config for {label}.")
    report_failures(result.errors)


def _quotas(admin: Any, args: argparse.Namespace, entity_type: str) -> None:
    from kafkalite.admin import (
        ClientQuotaAlteration,
        ClientQuotaEntity,
        ClientQuotaFilterComponent,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    name = None if args.entity_default else args.entity_name
    if args.describe:
        if args.entity_default:
            comps = [ClientQuotaFilterComponent(entity_type, default=True)]
        else:
            comps = [ClientQuotaFilterComponent(entity_type, name)]
        quotas = admin.describe_client_quotas(comps, timeout=args.timeout)
        scram = None
        if entity_type == "user" and name:
            described = admin.describe_user_scram_credentials([name], timeout=args.timeout)
            scram = described[name].value
        if args.json:
            emit_json({"quotas": [{"entity": e.as_dict(), "values": v} for e, v in quotas.items()],
                       "scram": [{"mechanism": c.mechanism.mechanism_name, "iterations": c.iterations}
                                 for c in (scram.credentials if scram else [])]})
        else:
            for entity, values in quotas.items():
                shown = ", ".join(f"{k}={v}" for k, v in sorted(values.items()))
                print(f"Quota configs for {entity} are {shown}")
            if scram:
                shown = ", ".join(f"{c.mechanism.mechanism_name}=iterations={c.iterations}" for c in scram.credentials)
                print(f"SCRAM credential configs for user-principal '{name}' are {shown}")
        return
    if not args.entity_default and not name:
        raise UsageError("--entity-name (or --entity-default) is required")
    adds = parse_add_config(args.add_config)
    deletes = _names(args.delete_config)
    scram_changes: list[Any] = []
    for mech in [k for k in adds if k.upper() in _SCRAM]:
        if entity_type != "user" or name is None:
            raise UsageError("SCRAM credentials belong to a named user (--entity-type users --entity-name U)")
        fields = dict(part.split("=", 1) for part in adds.pop(mech).split(",") if "=" in part)
        if "password" not in fields:
            raise UsageError(f"{mech} needs a password: '{mech}=[password=...]'")
        scram_changes.append(UserScramCredentialUpsertion(name, mech.upper(), fields["password"],
                                                          int(fields.get("iterations", 4096))))
    for mech in [k for k in deletes if k.upper() in _SCRAM]:
        deletes.remove(mech)
        scram_changes.append(UserScramCredentialDeletion(name or "", mech.upper()))
    errors: dict[Any, Any] = {}
    if adds or deletes:
        try:
            ops: dict[str, float | None] = {k: float(v) for k, v in adds.items()}
        except ValueError:
            raise UsageError(f"quota values must be numbers, got {adds}") from None
        ops.update({k: None for k in deletes})
        entity = ClientQuotaEntity({entity_type: name})
        result = admin.alter_client_quotas([ClientQuotaAlteration(entity, ops)], validate_only=args.validate_only,
                                           timeout=args.timeout)
        errors.update(result.errors)
    if scram_changes:
        errors.update(admin.alter_user_scram_credentials(scram_changes, timeout=args.timeout).errors)
    if not errors:
        label = f"{entity_type} {'<default>' if name is None else name}"
        if args.json:
            emit_json({"entity_type": entity_type, "entity_name": name, "altered": True})
        else:
            print(f"Completed updating config for {label}.")
    report_failures(errors)
