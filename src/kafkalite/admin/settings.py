"""The admin client's settings rules: the schema and the security checks every client
runs (:data:`kafkalite.settings.SECURITY`); the admin client has no checks of its own.

Example::

    from kafkalite.admin.settings import ADMIN_RULES
    cfg = ADMIN_RULES.resolve({"bootstrap.servers": "127.0.0.1:9092"})
    cfg.client_id          # 'adminclient-1'
"""

from __future__ import annotations

from kafkalite.config import ADMIN
from kafkalite.settings import ClientRules

#: The admin client's settings: ``ADMIN_RULES.resolve(config, **settings)``.
ADMIN_RULES = ClientRules(ADMIN)
