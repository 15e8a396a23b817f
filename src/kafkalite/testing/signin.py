"""Enterprise sign-in for tests: a KDC, an OIDC provider and a broker that trusts both.

:class:`SignInServices` starts Kafka's MiniKdc (:mod:`kafkalite.testing.kdc`) and
mock-oauth2-server (:mod:`kafkalite.testing.oidc`) side by side, then one broker with
:data:`~kafkalite.testing.properties.SIGNIN_PRESET`'s listeners: ``KERBEROS`` and
``KERBEROS_REAUTH`` (GSSAPI; the broker is ``kafka/127.0.0.1@EXAMPLE.COM``) and
``OAUTH`` (OAUTHBEARER validated against the provider's JWKS). The pytest fixtures
``kerberos_kdc``, ``oidc_provider``, ``kafka_broker_signin``, ``kafka_broker_kerberos``
and ``kafka_broker_oauth`` and ``python -m kafkalite.testing up --kerberos --oauth`` use it.

>>> with SignInServices(run_dir) as signin:                          # doctest: +SKIP
...     cfg = signin.broker.client_config("KERBEROS", **signin.kdc.client_settings("alice"))
...     Producer(cfg).send("t", b"signed in with Kerberos").result(10)

Clients using MIT Kerberos find the KDC through ``KRB5_CONFIG``
(:meth:`MiniKdc.environment_for_clients`); the fixtures set it for the test session.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType

from kafkalite.testing.broker import LocalBroker
from kafkalite.testing.distribution import DEFAULT_KAFKA_VERSION
from kafkalite.testing.kdc import BROKER_SERVICE, MiniKdc
from kafkalite.testing.oidc import AUDIENCE, MockOAuth2Server
from kafkalite.testing.properties import SIGNIN_PRESET, BrokerSignIn, SecurityPreset

CLIENT_PRINCIPALS = ("alice", "bob")
"""Kerberos client principals the KDC creates (each gets a keytab)."""

BROKER_PRINCIPAL = f"{BROKER_SERVICE}/127.0.0.1"

TOKEN_LIFETIME_S = 20
"""Lifetime of the test provider's tokens: short, so that sessions renew them
(refresh ahead of expiry, KIP-368 re-authentication) within a test run."""


def signin_preset(kerberos: bool = True, oauth: bool = True) -> SecurityPreset:
    """:data:`SIGNIN_PRESET` limited to the Kerberos or the OIDC listeners."""
    if kerberos and oauth:
        return SIGNIN_PRESET
    keep = {"KERBEROS", "KERBEROS_REAUTH"} if kerberos else {"OAUTH"}
    p = SIGNIN_PRESET
    return SecurityPreset(
        users=p.users, mechanisms=p.mechanisms, listener=p.listener,
        extra_listeners={k: v for k, v in p.extra_listeners.items() if k in keep},
        listener_mechanisms={k: v for k, v in p.listener_mechanisms.items() if k in keep},
        oidc_listeners=tuple(k for k in p.oidc_listeners if k in keep),
        listener_configs={k: v for k, v in p.listener_configs.items() if k in keep},
        authorizer=p.authorizer,
    )


class SignInServices:
    """A KDC and/or an OIDC provider, and a broker signing clients in with them.

    Args:
        run_dir: the services' files go into ``kdc/``, ``oidc/`` and ``broker/`` below it.
        kerberos / oauth: which of the two to run.
        token_lifetime_s: lifetime of the provider's tokens.
        ticket_lifetime_s: lifetime of the KDC's tickets (default a day; a shorter one
            lowers ApacheDS's 4-minute minimum to a tenth of it, see :class:`MiniKdc`:
            clients must log in again while a tenth is left, as Java's default renew
            window of 0.8 does).
        port: the broker's PLAINTEXT port (default a free one).
        tied: die with this process (tests); False for the CLI's ``up``.
    """

    def __init__(self, run_dir: Path, *, kerberos: bool = True, oauth: bool = True,
                 token_lifetime_s: int = TOKEN_LIFETIME_S, ticket_lifetime_s: int | None = None,
                 version: str = DEFAULT_KAFKA_VERSION,
                 port: int | None = None, tied: bool = True, auto_create_topics: bool = False) -> None:
        if not (kerberos or oauth):
            raise ValueError("SignInServices needs kerberos and/or oauth")
        self.run_dir = Path(run_dir)
        lifetime_ms = None if ticket_lifetime_s is None else ticket_lifetime_s * 1000
        self.kdc = MiniKdc((BROKER_PRINCIPAL, *CLIENT_PRINCIPALS), run_dir=self.run_dir / "kdc", tied=tied,
                           max_ticket_lifetime_ms=lifetime_ms,
                           min_ticket_lifetime_ms=None if lifetime_ms is None else min(240_000, lifetime_ms // 10)) \
            if kerberos else None
        self.oidc = MockOAuth2Server(token_lifetime_s=token_lifetime_s, run_dir=self.run_dir / "oidc", tied=tied) \
            if oauth else None
        self._preset = signin_preset(kerberos, oauth)
        self._version = version
        self._port = port
        self._tied = tied
        self._auto_create_topics = auto_create_topics
        self.broker: LocalBroker | None = None

    def __repr__(self) -> str:
        return f"<SignInServices kdc={self.kdc!r} oidc={self.oidc!r} broker={self.broker!r}>"

    def broker_signin(self) -> BrokerSignIn:
        """The KDC's and the provider's coordinates for the broker."""
        kdc, oidc = self.kdc, self.oidc
        return BrokerSignIn(
            krb5_conf=kdc.krb5_conf if kdc else None,
            keytab=kdc.keytab(BROKER_PRINCIPAL) if kdc else None,
            principal=kdc.principal(BROKER_PRINCIPAL) if kdc else None,
            jwks_url=oidc.jwks_url if oidc else None, issuer=oidc.issuer if oidc else None,
            audience=AUDIENCE if oidc else None,
        )

    def start(self, *, timeout: float = 120.0) -> SignInServices:
        """Start the KDC and the provider together, then the broker."""
        services = [s for s in (self.kdc, self.oidc) if s is not None]
        try:
            for service in services:
                service.launch()
            for service in services:
                service.wait_ready(timeout)
            self.broker = LocalBroker(self._version, run_dir=self.run_dir / "broker", port=self._port,
                                      security=self._preset, signin=self.broker_signin(), tied=self._tied,
                                      auto_create_topics=self._auto_create_topics)
            self.broker.start(timeout=timeout)
        except BaseException:
            self.kill()
            raise
        return self

    def log_tail(self, lines: int = 40) -> str:
        parts = [s.log_tail(lines) for s in (self.kdc, self.oidc, self.broker) if s is not None]
        return "\n".join(parts)

    def kill(self) -> None:
        for service in (self.broker, self.kdc, self.oidc):
            if service is not None:
                service.kill()

    def close(self, *, remove: bool | None = None) -> None:
        if self.broker is not None:
            self.broker.close(remove=remove)
        for service in (self.kdc, self.oidc):
            if service is not None:
                service.close(remove=remove)

    def __enter__(self) -> SignInServices:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def detached_state(services: SignInServices) -> dict[str, object]:
    """What ``python -m kafkalite.testing up --kerberos/--oauth`` records about the KDC
    and the provider (to print them in ``status`` and stop them in ``down``)."""
    from kafkalite.testing import processes

    state: dict[str, object] = {}
    if services.kdc is not None:
        kdc = services.kdc
        state["kdc"] = {"pid": kdc.pid, "start_time": processes.process_start_time(kdc.pid or 0),
                        "realm": kdc.realm, "address": f"{kdc.host}:{kdc.port}", "krb5_conf": str(kdc.krb5_conf),
                        "keytabs": {name: str(kdc.keytab(name)) for name in CLIENT_PRINCIPALS}}
    if services.oidc is not None:
        oidc = services.oidc
        state["oidc"] = {"pid": oidc.pid, "start_time": processes.process_start_time(oidc.pid or 0),
                         "token_endpoint": oidc.token_endpoint, "jwks_url": oidc.jwks_url, "issuer": oidc.issuer}
    return state


def describe_state(state: dict[str, object]) -> list[str]:
    """``status`` lines: how a client signs in to what ``up --kerberos/--oauth`` started."""
    lines = []
    kdc = state.get("kdc")
    if isinstance(kdc, dict):
        lines.append(f"  KDC {kdc['realm']} at {kdc['address']}: export KRB5_CONFIG={kdc['krb5_conf']}")
        for name, path in kdc["keytabs"].items():
            lines.append(f"    {name}@{kdc['realm']}: keytab {path}")
    oidc = state.get("oidc")
    if isinstance(oidc, dict):
        lines.append(f"  OIDC token endpoint {oidc['token_endpoint']} (any client id and secret; JWKS "
                     f"{oidc['jwks_url']})")
    return lines
