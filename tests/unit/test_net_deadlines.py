"""RequestDeadlines: one timer for every request in flight on a connection (issue 27)."""

from kafkalite.net.deadlines import RequestDeadlines


def test_the_timer_is_armed_for_the_earliest_deadline_only() -> None:
    deadlines: RequestDeadlines[str] = RequestDeadlines()
    assert deadlines.add(1, "a", deadline=30.0) == 30.0      # nothing armed yet: arm
    assert deadlines.add(2, "b", deadline=30.5) is None      # later: the armed timer comes first
    assert deadlines.add(3, "c", deadline=10.0) == 10.0      # earlier: arm again, sooner
    assert deadlines.timer_at == 10.0 and len(deadlines) == 3


def test_answers_forget_their_deadline_and_the_timer_rearms_for_what_is_left() -> None:
    deadlines: RequestDeadlines[str] = RequestDeadlines()
    deadlines.add(1, "a", deadline=10.0)
    deadlines.add(2, "b", deadline=20.0)
    deadlines.answered(1)
    deadlines.answered(99)  # unknown (already failed): nothing happens
    assert deadlines.fired(now=10.0) == ([], 20.0)
    deadlines.answered(2)
    assert deadlines.fired(now=20.0) == ([], None)           # nothing in flight: no timer
    assert deadlines.timer_at is None
    assert deadlines.add(3, "c", deadline=50.0) == 50.0      # the next request arms it again


def test_requests_past_their_deadline_are_reported_once_in_order() -> None:
    deadlines: RequestDeadlines[str] = RequestDeadlines()
    for cid, deadline in [(1, 5.0), (2, 6.0), (3, 9.0)]:
        deadlines.add(cid, f"r{cid}", deadline)
    assert deadlines.fired(now=6.0) == (["r1", "r2"], 9.0)
    assert deadlines.fired(now=6.5) == ([], 9.0)             # reported once
    assert deadlines.fired(now=9.0) == (["r3"], None)
    assert len(deadlines) == 0


def test_clear_forgets_everything() -> None:
    deadlines: RequestDeadlines[str] = RequestDeadlines()
    deadlines.add(1, "a", deadline=1.0)
    deadlines.clear()
    assert len(deadlines) == 0 and deadlines.timer_at is None
    assert deadlines.fired(now=2.0) == ([], None)
