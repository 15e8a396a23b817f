"""The one retry and reconnect backoff policy of kafkalite.

Exponential with jitter, as the Java client does it (``retry.backoff.ms`` ..
``retry.backoff.max.ms``; ``reconnect.backoff.ms`` .. ``reconnect.backoff.max.ms``):
attempt *n* waits ``initial * 2**n`` capped at ``max``, times a random factor in
[0.8, 1.2] so that many clients restarting together do not retry in lockstep (KIP-580).

Example::

    backoff = ExponentialBackoff(100, 1000)
    backoff.delay_ms(0)   # ~100
    backoff.delay_ms(3)   # ~800
    backoff.delay_ms(9)   # ~1000 (capped)
"""

from __future__ import annotations

import math
import random


class ExponentialBackoff:
    """Delays for attempt numbers 0, 1, 2, ... (pure function of the attempt plus jitter)."""

    def __init__(self, initial_ms: float, max_ms: float, multiplier: float = 2.0, jitter: float = 0.2,
                 rng: random.Random | None = None) -> None:
        self.initial_ms = max(0.0, float(initial_ms))
        self.max_ms = max(self.initial_ms, float(max_ms))
        self.multiplier = multiplier
        self.jitter = jitter
        self._rng = rng or random.Random()
        # Attempts past this exponent are always capped; avoids float overflow.
        ratio = self.max_ms / self.initial_ms if self.initial_ms > 0 else 1.0
        self._cap_exp = math.log(ratio, multiplier) if ratio > 1 else 0.0

    def delay_ms(self, attempt: int) -> float:
        if self.initial_ms == 0:
            return 0.0
        exp = min(max(attempt, 0), self._cap_exp + 1)
        term = min(self.initial_ms * math.pow(self.multiplier, exp), self.max_ms)
        if self.jitter:
            term *= self._rng.uniform(1 - self.jitter, 1 + self.jitter)
        return min(term, self.max_ms * (1 + self.jitter))

    def delay_s(self, attempt: int) -> float:
        return self.delay_ms(attempt) / 1000.0
