from __future__ import annotations

import random

from kafkalite.backoff import ExponentialBackoff


def test_exponential_with_cap_and_jitter() -> None:
    b = ExponentialBackoff(100, 1000, rng=random.Random(1))
    for attempt, base in [(0, 100), (1, 200), (2, 400), (3, 800)]:
        assert 0.8 * base <= b.delay_ms(attempt) <= 1.2 * base
    assert all(800 <= b.delay_ms(n) <= 1200 for n in range(4, 200))


def test_zero_initial_means_no_wait() -> None:
    assert ExponentialBackoff(0, 0).delay_ms(5) == 0
