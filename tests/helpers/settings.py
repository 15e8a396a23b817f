"""Settings for tests that build engine parts by hand, by client kind.

The library resolves each client's settings through that client's own rules (its
``settings`` module); a test that builds a ``NetworkClient`` or a ``BrokerConnection``
by hand names the kind instead, and gets exactly what that client's front would.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafkalite.admin.settings import ADMIN_RULES
from kafkalite.config import Config
from kafkalite.consumer.settings import CONSUMER_RULES
from kafkalite.producer.settings import PRODUCER_RULES
from kafkalite.settings import ClientRules
from kafkalite.share.settings import SHARE_CONSUMER_RULES

RULES: dict[str, ClientRules] = {r.kind: r for r in (PRODUCER_RULES, CONSUMER_RULES, SHARE_CONSUMER_RULES, ADMIN_RULES)}


def resolve(kind: str, settings: Mapping[str, Any] | None = None, **kwargs: Any) -> Config:
    """``kind``'s settings, checked as its client checks them."""
    return RULES[kind].resolve(settings, **kwargs)
