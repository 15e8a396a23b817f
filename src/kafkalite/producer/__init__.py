"""The producer: batching, partitioning, idempotence and transactions.

Use :class:`kafkalite.Producer` (blocking) or :class:`kafkalite.aio.Producer` (asyncio).
"""
