"""The exit guard's bookkeeping without a broker: what counts as undelivered, per topic."""

from __future__ import annotations

from types import SimpleNamespace

from kafkalite.errors import KafkaError
from kafkalite.producer.exit_guard import undelivered_by_topic


def _batch(topic: str, n: int, *, done: bool, error: BaseException | None = None, children=None):
    return SimpleNamespace(topic=topic, record_count=n, done=done, error=error, children=children,
                           sent_once=False, last_error=None)


def test_undelivered_records_are_counted_per_topic() -> None:
    batches = [
        _batch("a", 10, done=True),                                   # delivered
        _batch("a", 5, done=False),                                   # still pending
        _batch("b", 7, done=True, error=KafkaError("closed")),        # failed
        # split after MESSAGE_TOO_LARGE: only the children's outcomes count
        _batch("c", 6, done=True, children=[(0, _batch("c", 3, done=True)),
                                            (3, _batch("c", 3, done=False))]),
    ]
    assert undelivered_by_topic(batches) == {"a": 5, "b": 7, "c": 3}
    assert undelivered_by_topic([_batch("a", 4, done=True)]) == {}
