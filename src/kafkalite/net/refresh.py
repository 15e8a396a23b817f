"""When to refresh an expiring credential: Java's rules, as pure functions (no I/O).

Two credentials expire while a client runs: an OAUTHBEARER token and a Kerberos TGT.
The Java client refreshes both ahead of expiry, at a random point of their lifetime so
that many clients started together do not all go to the identity provider at once;
kafkalite computes the same moments (times are seconds since the epoch).

>>> oauth_refresh_at(now=0, start=0, expires=3600, window_factor=0.8, window_jitter=0.0,
...                  min_period_s=60, buffer_s=300)
2880.0
>>> kerberos_refresh_at(now=0, start=0, expires=1000, window_factor=0.8, jitter=0.0,
...                     min_time_before_relogin_s=60)
800.0
"""

from __future__ import annotations

import random


def oauth_refresh_at(*, now: float, start: float | None, expires: float, window_factor: float,
                     window_jitter: float, min_period_s: float, buffer_s: float,
                     rand: float | None = None) -> float:
    """Java's ``ExpiringCredentialRefreshingLogin.refreshMs`` (``sasl.login.refresh.*``).

    The proposed moment is ``start + lifetime * (factor + jitter * U)``; it is moved
    back to ``buffer_s`` before expiry and forward to ``min_period_s`` from now. When
    the remaining lifetime cannot hold both buffers (short-lived tokens), the buffers
    are ignored and the window applies to the remaining lifetime.
    """
    pct = window_factor + window_jitter * (random.random() if rand is None else rand)
    if now > expires:
        return now  # already expired: refresh at once
    if now + min_period_s + buffer_s > expires:
        return now + (expires - now) * pct
    begin = now if start is None else start
    proposed = begin + (expires - begin) * pct
    proposed = min(proposed, expires - buffer_s)
    return max(proposed, now + min_period_s)


def kerberos_refresh_at(*, now: float, start: float, expires: float, window_factor: float, jitter: float,
                        min_time_before_relogin_s: float, rand: float | None = None) -> float:
    """Java's ``KerberosLogin`` refresh time (``sasl.kerberos.ticket.renew.*``).

    ``start + lifetime * (factor + jitter * U)``, but not sooner than
    ``min_time_before_relogin_s`` from now unless the ticket expires before that, in
    which case at once (Java: "refreshing now because expiry is before next scheduled
    refresh time").
    """
    proposed = start + (expires - start) * (window_factor + jitter * (random.random() if rand is None else rand))
    if proposed > expires or min_time_before_relogin_s > expires - now:
        return now
    return max(proposed, now + min_time_before_relogin_s)


def retry_delays(backoff_s: float, max_s: float) -> list[float]:
    """Java's ``Retry``: waits of ``backoff * 2^n`` while their sum stays within ``max_s``.

    >>> retry_delays(0.1, 1.0)
    [0.1, 0.2, 0.4]
    """
    delays: list[float] = []
    total, wait = 0.0, backoff_s
    while wait > 0 and total + wait <= max_s:
        delays.append(wait)
        total += wait
        wait *= 2
    return delays
