"""Kerberos logins for SASL GSSAPI, as Java's ``KerberosLogin`` does them.

Settings are the Java client's: ``sasl.kerberos.service.name`` and a
``sasl.jaas.config`` for ``com.sun.security.auth.module.Krb5LoginModule``, either

- from a **keytab**: ``useKeyTab=true keyTab="/etc/kafka/app.keytab"
  principal="app@EXAMPLE.COM"``: a TGT is fetched from the KDC with the keytab's key
  into a private in-memory ticket cache, and fetched again (re-login) at
  ``sasl.kerberos.ticket.renew.window.factor`` (+ jitter) of its lifetime, never sooner
  than ``sasl.kerberos.min.time.before.relogin`` after the previous login; or
- from a **ticket cache** filled by ``kinit``: ``useTicketCache=true`` (optionally
  ``ticketCache="/tmp/krb5cc_1000"``, else ``KRB5CCNAME`` or the default cache); at the
  same moment the TGT is renewed with ``sasl.kerberos.kinit.cmd -R``.

Without ``sasl.jaas.config`` the default ticket cache is used, as ``kinit`` users
expect. Logins are shared by every connection of every client with the same settings
(Java's ``LoginManager``) and happen lazily, on the I/O executor, when a connection
authenticates. The Kerberos work itself is MIT Kerberos' through the ``gssapi`` package
(``pip install "kafkalite[gssapi]"``); the realm's ``krb5.conf`` is found the usual way
(``KRB5_CONFIG`` or ``/etc/krb5.conf``).

Every failure is a :class:`SaslAuthenticationError` naming the principal (and the
service principal or ticket cache) with the KDC's reason.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkalite.config import Config
from kafkalite.errors import ConfigError, IllegalSaslStateError, SaslAuthenticationError
from kafkalite.net.jaas import jaas_entry
from kafkalite.net.refresh import kerberos_refresh_at

if TYPE_CHECKING:
    import gssapi  # typed (py.typed); imported at run time only after require_gssapi()

log = logging.getLogger("kafkalite.net.kerberos")

KRB5_LOGIN_MODULES = ("com.sun.security.auth.module.Krb5LoginModule", "com.ibm.security.auth.module.Krb5LoginModule")
# Krb5LoginModule options with no effect on a client that never prompts and never
# accepts connections (Java uses them for servers and interactive logins).
_NEUTRAL_OPTIONS = ("storeKey", "doNotPrompt", "isInitiator", "refreshKrb5Config", "debug", "renewTGT",
                    "clearPass", "tryFirstPass", "useFirstPass", "storePass")
_OPTIONS = ("useKeyTab", "keyTab", "principal", "useTicketCache", "ticketCache", "serviceName", *_NEUTRAL_OPTIONS)

GSSAPI_HINT = ('pip install "kafkalite[gssapi]" (the gssapi package builds against MIT Kerberos: on Debian/Ubuntu '
               "apt-get install libkrb5-dev gcc; at run time libgssapi-krb5-2, and krb5-user for kinit/klist)")


def require_gssapi() -> None:
    """Nothing if the ``gssapi`` package imports, else a ConfigError saying what to install
    (callers import it after this check)."""
    try:
        import gssapi  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"sasl.mechanism GSSAPI needs the 'gssapi' package, which is not installed ({exc}): "
                          f"{GSSAPI_HINT}") from None


@dataclass(frozen=True)
class KerberosSettings:
    """The Kerberos identity and renewal settings of one client (see the module docstring)."""

    service_name: str
    principal: str | None = None
    keytab: str | None = None
    ticket_cache: str | None = None
    kinit_cmd: str = "/usr/bin/kinit"
    window_factor: float = 0.8
    jitter: float = 0.05
    min_time_before_relogin_s: float = 60.0

    @property
    def uses_keytab(self) -> bool:
        return self.keytab is not None

    def describe(self) -> str:
        """Who logs in, from where (for messages; no secrets in keytab paths)."""
        who = self.principal or "the default principal"
        if self.keytab:
            return f"{who} from keytab {self.keytab}"
        return f"{who} from ticket cache {self.ticket_cache or os.environ.get('KRB5CCNAME') or '(default)'}"


def kerberos_settings(cfg: Config) -> KerberosSettings:
    """Read and check the GSSAPI settings; every problem is a ConfigError naming it."""
    entry = jaas_entry(cfg)
    options: dict[str, str] = {}
    if entry is not None:
        if entry.module not in KRB5_LOGIN_MODULES:
            raise ConfigError(f"sasl.mechanism GSSAPI needs sasl.jaas.config for "
                              f"com.sun.security.auth.module.Krb5LoginModule, not {entry.module}")
        unknown = sorted(set(entry.options) - set(_OPTIONS))
        if unknown:
            raise ConfigError(f"sasl.jaas.config: Krb5LoginModule option(s) {unknown} are not supported; "
                              f"supported: {', '.join(_OPTIONS)}")
        options = dict(entry.options)
    jaas_service = options.get("serviceName")
    service = cfg["sasl.kerberos.service.name"]
    if jaas_service and service and jaas_service != service:
        # Java: "Conflicting serviceName values found in JAAS and Kafka configs".
        raise ConfigError(f"sasl.kerberos.service.name {service!r} and the JAAS option serviceName "
                          f"{jaas_service!r} disagree")
    service = service or jaas_service
    if not service:
        hint = ""
        if cfg["sasl.username"] or (entry is not None and "username" in entry.options):
            hint = (" (a user name is configured: set sasl.mechanism to PLAIN or SCRAM-SHA-256/512; GSSAPI is "
                    "the Java client's default mechanism)")
        raise ConfigError("sasl.mechanism GSSAPI needs 'sasl.kerberos.service.name', the brokers' Kerberos "
                          f"service name (usually 'kafka'){hint}")
    use_keytab = entry.flag_option("useKeyTab") if entry is not None else False
    keytab = options.get("keyTab")
    principal = options.get("principal")
    if use_keytab:
        if not keytab:
            raise ConfigError("sasl.jaas.config: useKeyTab=true needs keyTab=\"/path/to/file.keytab\"")
        if not principal:
            raise ConfigError("sasl.jaas.config: useKeyTab=true needs principal=\"name@REALM\"")
        if not os.path.isfile(keytab):
            raise ConfigError(f"sasl.jaas.config: keyTab {keytab!r} does not exist")
        if not os.access(keytab, os.R_OK):
            raise ConfigError(f"sasl.jaas.config: keyTab {keytab!r} is not readable by this process")
    elif keytab:
        raise ConfigError("sasl.jaas.config: keyTab is set but useKeyTab is not true")
    elif entry is not None and not entry.flag_option("useTicketCache"):
        raise ConfigError("sasl.jaas.config for GSSAPI needs useKeyTab=true (with keyTab and principal) or "
                          "useTicketCache=true (a ticket cache filled by kinit)")
    require_gssapi()
    return KerberosSettings(
        service_name=service, principal=principal, keytab=keytab if use_keytab else None,
        ticket_cache=options.get("ticketCache") if not use_keytab else None,
        kinit_cmd=cfg["sasl.kerberos.kinit.cmd"], window_factor=cfg["sasl.kerberos.ticket.renew.window.factor"],
        jitter=cfg["sasl.kerberos.ticket.renew.jitter"],
        min_time_before_relogin_s=cfg["sasl.kerberos.min.time.before.relogin"] / 1000.0,
    )


class KerberosLogin:
    """One Kerberos identity: its current credentials and when to renew them.

    Blocking (it may talk to the KDC): call it from an executor thread. Thread-safe.
    """

    def __init__(self, settings: KerberosSettings, *, clock: Callable[[], float] = time.time,
                 run: Callable[..., Any] = subprocess.run) -> None:
        self.settings = settings
        self._clock = clock
        self._run = run
        self._lock = threading.Lock()
        self._creds: gssapi.Credentials | None = None
        self._expires_at = 0.0
        self._refresh_at = 0.0
        self._logins = 0
        self.principal: str | None = settings.principal

    @property
    def logins(self) -> int:
        """How many times credentials were (re)acquired."""
        return self._logins

    @property
    def expires_at(self) -> float:
        return self._expires_at

    def credentials(self) -> gssapi.Credentials:
        """Current credentials, logging in again first when the renew window has come."""
        with self._lock:
            now = self._clock()
            if self._creds is None or now >= self._refresh_at:
                return self._login(now)
            return self._creds

    def _login(self, now: float) -> gssapi.Credentials:
        """Log in (again); the credentials to use now (the current ones while a failed
        re-login waits to be tried again)."""
        require_gssapi()
        from gssapi.raw.misc import GSSError

        current = self._creds
        fresh = current is None
        if not fresh and not self.settings.uses_keytab:
            self._renew_ticket_cache()
        try:
            creds = self._acquire()
            lifetime = creds.lifetime
        except GSSError as exc:
            if current is not None and now < self._expires_at:
                # Keep the current TGT until it expires; try again later (Java logs and retries).
                log.warning("Kerberos re-login of %s failed (keeping the current ticket until %s): %s",
                            self.settings.describe(), time.ctime(self._expires_at), _gss_reason(exc))
                self._refresh_at = now + max(1.0, min(self.settings.min_time_before_relogin_s,
                                                      (self._expires_at - now) / 2))
                return current
            raise self._login_error(exc) from None
        if lifetime is not None and lifetime <= 0:
            raise SaslAuthenticationError(
                f"the Kerberos ticket of {self.settings.describe()} has expired; run kinit again "
                "(or log in from a keytab)")
        self._creds = creds
        self._logins += 1
        self.principal = str(creds.name)
        self._expires_at = now + (lifetime if lifetime is not None else 86400)
        s = self.settings
        self._refresh_at = kerberos_refresh_at(now=now, start=now, expires=self._expires_at,
                                               window_factor=s.window_factor, jitter=s.jitter,
                                               min_time_before_relogin_s=s.min_time_before_relogin_s)
        log.debug("Kerberos login %d of %s: TGT valid until %s, next login at %s", self._logins,
                  s.describe(), time.ctime(self._expires_at), time.ctime(self._refresh_at))
        return creds

    def _acquire(self) -> gssapi.Credentials:
        import gssapi

        s = self.settings
        name = gssapi.Name(s.principal, gssapi.NameType.kerberos_principal) if s.principal else None
        store: dict[bytes | str, bytes | str] | None = None
        if s.uses_keytab and s.keytab:
            # A fresh private cache per login, so the keytab's key fetches a new TGT.
            store = {"client_keytab": s.keytab, "ccache": f"MEMORY:kafkalite-{id(self):x}-{self._logins}"}
        elif s.ticket_cache:
            store = {"ccache": s.ticket_cache}
        return gssapi.Credentials(name=name, usage="initiate", store=store)

    def _renew_ticket_cache(self) -> None:
        """Java's ticket-cache refresh: ``kinit -R`` before the TGT expires."""
        cmd = [self.settings.kinit_cmd, "-R"]
        if self.settings.ticket_cache:
            cmd += ["-c", self.settings.ticket_cache]
        try:
            done = self._run(cmd, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError) as exc:
            log.warning("could not renew the Kerberos ticket of %s with %s: %s",
                        self.settings.describe(), " ".join(cmd), exc)
            return
        if done.returncode != 0:
            log.warning("renewing the Kerberos ticket of %s with %s failed: %s", self.settings.describe(),
                        " ".join(cmd), (done.stderr or "").strip())

    def _login_error(self, exc: Exception) -> SaslAuthenticationError:
        reason = _gss_reason(exc)
        s = self.settings
        lowered = reason.lower()
        if "client" in lowered and "not found" in lowered:
            advice = f"the KDC does not know principal {s.principal!r}"
        elif "expired" in lowered:
            advice = "the ticket has expired; run kinit again (or log in from a keytab)"
        elif "no credentials cache" in lowered or "can't find client principal" in lowered \
                or "no key table entry" in lowered:
            advice = ("the keytab holds no key for this principal" if s.uses_keytab
                      else "there is no ticket for this principal; run kinit first")
        elif "integrity" in lowered or "password incorrect" in lowered or "preauthentication" in lowered:
            advice = "the keytab's keys are not the KDC's (a stale or foreign keytab?)"
        elif "cannot contact" in lowered or "unable to reach" in lowered or "cannot find kdc" in lowered:
            advice = "no KDC answers for the realm (check krb5.conf / KRB5_CONFIG)"
        else:
            advice = "see the KDC's reason"
        return SaslAuthenticationError(f"Kerberos login of {s.describe()} failed: {advice} ({reason})")


class GssContext:
    """A GSS-API initiator context for one authentication (the broker's service principal).

    Adapter between :class:`~kafkalite.net.sasl.GssapiMechanism` (which only needs
    ``step``, ``complete``, ``wrap``, ``unwrap``) and the ``gssapi`` package.
    """

    def __init__(self, login: KerberosLogin, host: str) -> None:
        self.login = login
        self.host = host
        self.service = f"{login.settings.service_name}/{host}"
        self._ctx: gssapi.SecurityContext | None = None

    @property
    def complete(self) -> bool:
        return bool(self._ctx is not None and self._ctx.complete)

    def step(self, token: bytes | None) -> bytes:
        require_gssapi()
        import gssapi
        from gssapi.raw.misc import GSSError

        try:
            if self._ctx is None:
                creds = self.login.credentials()
                target = gssapi.Name(f"{self.login.settings.service_name}@{self.host}",
                                     gssapi.NameType.hostbased_service)
                flags = gssapi.RequirementFlag.mutual_authentication | gssapi.RequirementFlag.integrity
                self._ctx = gssapi.SecurityContext(name=target, creds=creds, usage="initiate", flags=flags)
            return bytes(self._ctx.step(token) or b"")
        except GSSError as exc:
            raise self._error(exc) from None

    def unwrap(self, message: bytes) -> bytes:
        from gssapi.raw.misc import GSSError

        try:
            return bytes(self._established().unwrap(message).message)
        except GSSError as exc:
            raise self._error(exc) from None

    def wrap(self, message: bytes) -> bytes:
        from gssapi.raw.misc import GSSError

        try:
            return bytes(self._established().wrap(message, False).message)
        except GSSError as exc:
            raise self._error(exc) from None

    def _established(self) -> gssapi.SecurityContext:
        if self._ctx is None:  # GssapiMechanism wraps and unwraps only after step()
            raise IllegalSaslStateError(f"GSSAPI: no security context with {self.service} yet")
        return self._ctx

    def _error(self, exc: Exception) -> SaslAuthenticationError:
        reason = _gss_reason(exc)
        lowered = reason.lower()
        if "server" in lowered and "not found" in lowered:
            advice = (f"the KDC knows no service principal {self.service} (check sasl.kerberos.service.name "
                      f"'{self.login.settings.service_name}' and the broker's host name)")
        elif "expired" in lowered:
            advice = "the ticket has expired; run kinit again (or log in from a keytab)"
        else:
            advice = f"could not get or use a ticket for {self.service}"
        return SaslAuthenticationError(
            f"Kerberos authentication of {self.login.principal or self.login.settings.describe()} "
            f"to {self.service} failed: {advice} ({reason})")


def _gss_reason(exc: Exception) -> str:
    """MIT's own text of a GSSError (the minor message says what the KDC said)."""
    gen_message = getattr(exc, "gen_message", None)
    if callable(gen_message):
        try:
            text = str(gen_message())
        except Exception:
            text = str(exc)
    else:
        text = str(exc)
    major, _, minor = text.partition(", Minor (")
    minor_text = minor.split("): ", 1)[1].strip() if "): " in minor else ""
    if minor_text and minor_text not in ("Success", "Unknown error"):
        return minor_text
    # No KDC detail (e.g. an expired credential found locally): the major status says it.
    return major.split("): ", 1)[1].strip() if "): " in major else text.strip()


_logins: dict[KerberosSettings, KerberosLogin] = {}
_logins_lock = threading.Lock()


def login_for(settings: KerberosSettings) -> KerberosLogin:
    """The shared login of these settings (one per identity in the process, like Java's
    ``LoginManager``)."""
    with _logins_lock:
        login = _logins.get(settings)
        if login is None:
            login = _logins[settings] = KerberosLogin(settings)
        return login
