"""The connection lifecycle state machine (net/lifecycle.py) without a broker or a socket:
every transition, what each stage permits, held requests, illegal events refused."""

from __future__ import annotations

import pytest

from kafkalite.errors import IllegalStateError, KafkaConnectionError, KafkaError
from kafkalite.net.lifecycle import (
    PERMITS,
    TRANSITIONS,
    ConnectionLifecycle,
    Event,
    IllegalConnectionEventError,
    Permits,
    Stage,
)

# The event method of each event, and an argument it takes.
CALLS = {
    Event.CONNECT: lambda life: life.connect(),
    Event.CONNECTED: lambda life: life.connected(),
    Event.VERSIONS_AGREED: lambda life: life.versions_agreed(),
    Event.AUTHENTICATED: lambda life: life.authenticated(),
    Event.REAUTHENTICATION_STARTED: lambda life: life.reauthentication_started(),
    Event.REAUTHENTICATED: lambda life: life.reauthenticated(),
    Event.TRANSPORT_LOST: lambda life: life.transport_lost(KafkaConnectionError("lost")),
    Event.CLOSE: lambda life: life.close(),
}

# The shortest way to each stage (a SASL connection reaches every stage).
PATHS = {
    Stage.NEW: [],
    Stage.CONNECTING: [Event.CONNECT],
    Stage.NEGOTIATING: [Event.CONNECT, Event.CONNECTED],
    Stage.AUTHENTICATING: [Event.CONNECT, Event.CONNECTED, Event.VERSIONS_AGREED],
    Stage.READY: [Event.CONNECT, Event.CONNECTED, Event.VERSIONS_AGREED, Event.AUTHENTICATED],
    Stage.REAUTHENTICATING: [Event.CONNECT, Event.CONNECTED, Event.VERSIONS_AGREED, Event.AUTHENTICATED,
                             Event.REAUTHENTICATION_STARTED],
    Stage.LOST: [Event.CONNECT, Event.CONNECTED, Event.VERSIONS_AGREED, Event.AUTHENTICATED,
                 Event.REAUTHENTICATION_STARTED, Event.TRANSPORT_LOST],
    Stage.CLOSED: [Event.CLOSE],
}


def at(stage: Stage, authenticates: bool = True) -> ConnectionLifecycle[str]:
    life: ConnectionLifecycle[str] = ConnectionLifecycle(authenticates=authenticates)
    for event in PATHS[stage]:
        CALLS[event](life)
    assert life.stage is stage
    return life


def test_a_plaintext_connection_is_ready_after_api_versions() -> None:
    life: ConnectionLifecycle[str] = ConnectionLifecycle(authenticates=False)
    seen = [life.stage]
    for step in (life.connect, life.connected, life.versions_agreed):
        step()
        seen.append(life.stage)
    assert seen == [Stage.NEW, Stage.CONNECTING, Stage.NEGOTIATING, Stage.READY]
    assert life.sends_now and life.established
    with pytest.raises(IllegalConnectionEventError, match="'authenticated' is not allowed in stage 'ready'"):
        life.authenticated()


def test_a_sasl_connection_authenticates_before_it_is_ready() -> None:
    life = at(Stage.NEGOTIATING)
    life.versions_agreed()
    assert life.stage is Stage.AUTHENTICATING and not life.sends_now and not life.established
    life.authenticated()
    assert life.stage is Stage.READY and life.sends_now and life.established


def test_what_each_stage_permits() -> None:
    expected = {
        Stage.NEW: Permits(),
        Stage.CONNECTING: Permits(),
        Stage.NEGOTIATING: Permits(handshake=True, open=True),
        Stage.AUTHENTICATING: Permits(handshake=True, open=True),
        Stage.READY: Permits(sends_now=True, open=True),
        Stage.REAUTHENTICATING: Permits(holds=True, handshake=True, open=True),
        Stage.LOST: Permits(open=True),
        Stage.CLOSED: Permits(),
    }
    assert expected == PERMITS
    for stage in Stage:
        life = at(stage)
        assert life.permits == expected[stage] and life.sends_now == expected[stage].sends_now, stage
    # Exactly one stage writes application requests, exactly one holds them.
    assert [s for s, p in PERMITS.items() if p.sends_now] == [Stage.READY]
    assert [s for s, p in PERMITS.items() if p.holds] == [Stage.REAUTHENTICATING]


@pytest.mark.parametrize("stage,event", sorted(TRANSITIONS, key=lambda k: (k[0].value, k[1].value)),
                         ids=lambda v: v.value)
def test_every_transition(stage: Stage, event: Event) -> None:
    life = at(stage)
    CALLS[event](life)
    target = TRANSITIONS[(stage, event)]
    if (stage, event) == (Stage.NEGOTIATING, Event.VERSIONS_AGREED):
        target = Stage.AUTHENTICATING  # this connection authenticates (see the plaintext test)
    assert life.stage is target
    assert life.permits is PERMITS[target]


ILLEGAL = [(s, e) for s in Stage for e in Event if (s, e) not in TRANSITIONS]


@pytest.mark.parametrize("stage,event", ILLEGAL, ids=[f"{s.value}-{e.value}" for s, e in ILLEGAL])
def test_illegal_events_are_refused_with_a_typed_error_and_change_nothing(stage: Stage, event: Event) -> None:
    life = at(stage)
    before = (life.stage, life.permits, life.sends_now, life.established, life.held)
    with pytest.raises(IllegalConnectionEventError) as refused:
        CALLS[event](life)
    assert isinstance(refused.value, IllegalStateError) and isinstance(refused.value, KafkaError)
    assert f"'{event.value}' is not allowed in stage '{stage.value}'" in str(refused.value)
    assert (life.stage, life.permits, life.sends_now, life.established, life.held) == before


def test_the_illegal_list_is_most_pairs() -> None:
    # 8 stages x 8 events; the table takes 7 + one close per stage.
    assert len(TRANSITIONS) == 7 + len(Stage) and len(ILLEGAL) == len(Stage) * len(Event) - len(TRANSITIONS)


def test_requests_held_during_a_reauthentication_come_back_in_order() -> None:
    life = at(Stage.REAUTHENTICATING)
    for name in ("a", "b", "c"):
        life.hold(name)
    assert life.held == 3 and not life.sends_now
    assert life.reauthenticated() == ["a", "b", "c"]
    assert life.stage is Stage.READY and life.held == 0 and life.sends_now
    # The next session: held again, from empty.
    life.reauthentication_started()
    life.hold("d")
    assert life.reauthenticated() == ["d"]


@pytest.mark.parametrize("stage", [s for s in Stage if s is not Stage.REAUTHENTICATING], ids=lambda s: s.value)
def test_requests_are_held_only_while_reauthenticating(stage: Stage) -> None:
    life = at(stage)
    with pytest.raises(IllegalConnectionEventError, match=f"not held in stage '{stage.value}'"):
        life.hold("x")
    assert life.held == 0


def test_a_socket_lost_during_a_reauthentication_hands_back_the_held_requests_and_waits_for_the_verdict() -> None:
    life = at(Stage.REAUTHENTICATING)
    life.hold("a")
    life.hold("b")
    reason = KafkaConnectionError("connection to b:9092 lost")
    assert life.transport_lost(reason) == ["a", "b"]
    assert life.stage is Stage.LOST and life.lost_reason is reason
    assert life.permits.open and not life.permits.handshake and not life.sends_now
    with pytest.raises(IllegalConnectionEventError):
        life.reauthenticated()  # the transport closes with the verdict instead
    assert life.close() == [] and life.stage is Stage.CLOSED


def test_closing_hands_back_the_held_requests_and_closing_again_does_nothing() -> None:
    life = at(Stage.REAUTHENTICATING)
    life.hold("a")
    assert life.close() == ["a"]
    assert life.stage is Stage.CLOSED and life.held == 0 and not life.permits.open
    assert life.close() == [] and life.stage is Stage.CLOSED
    assert life.established  # it was READY once: counted as a closed connection


@pytest.mark.parametrize("stage", [Stage.NEW, Stage.CONNECTING, Stage.NEGOTIATING, Stage.AUTHENTICATING],
                         ids=lambda s: s.value)
def test_a_connection_closed_before_it_was_ready_was_never_established(stage: Stage) -> None:
    life = at(stage)
    life.close()
    assert life.stage is Stage.CLOSED and not life.established
