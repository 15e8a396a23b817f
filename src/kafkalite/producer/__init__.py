"""The producer: batching, partitioning, idempotence and transactions.

Use :class:`kafkalite.Producer` (blocking) or :class:`kafkalite.aio.Producer` (asyncio).
Importing this package registers the producer's cross-setting checks with
:mod:`kafkalite.config`.
"""

from kafkalite.producer import settings as _settings  # noqa: F401  (registers @cross_check rules)
