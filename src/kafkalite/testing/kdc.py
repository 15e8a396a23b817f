"""A real Kerberos KDC for tests: Apache Kafka's own ``MiniKdc``.

``kafka.security.minikdc.MiniKdc`` ships in Kafka's test jar
(``org.apache.kafka:kafka_2.13:4.3.1:test``) and runs Apache Directory Server's KDC;
its jars come from Maven Central by a committed lock (``locks/minikdc-4.3.1.json``, see
:mod:`kafkalite.testing.jarsets`) and it is started with its ``main``
(``WORKDIR PROPERTIES KEYTAB PRINCIPALS...``), which creates the principals and writes
one keytab with all their keys. The harness then gives each principal a keytab of its
own and writes the ``krb5.conf`` that clients (``KRB5_CONFIG``) and brokers
(``-Djava.security.krb5.conf``) read.

>>> with MiniKdc(principals=("kafka/127.0.0.1", "alice")) as kdc:    # doctest: +SKIP
...     kdc.client_settings("alice")["sasl.jaas.config"]
'com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true ...'

It is started through a small launcher (``java/MiniKdcLauncher.java``, compiled with
the JDK's ``javac``) that closes the TCP connections clients closed: ApacheDS ignores
that event, and each such connection otherwise kept one of its I/O threads spinning at
100 % of a core for the rest of the KDC's life (three threads, most of a 2-core machine,
after a few sign-ins).

Two properties of this KDC shape the tests (ApacheDS's, not Kerberos's):

- it never issues a TGT for less than 4 minutes (ApacheDS's
  ``KerberosConfig.DEFAULT_TGS_MINIMUM_TICKET_LIFETIME``, which MiniKdc does not expose:
  with ``max.ticket.lifetime`` below it, or ``kinit -l 3m``, every request fails with
  "Requested effective lifetime is negative or too short"), and its ticket-granting
  service refuses a service ticket shorter than the allowable clock skew (5 minutes),
  so a service ticket needs a TGT with more than 5 minutes left. The default tickets are Kafka's (a day);
  with ``min_ticket_lifetime_ms`` the launcher lowers the running KDC's minimum and
  clock skew, so that a test can outlive tickets of a few seconds;
- with MIT clients, TGS requests fail ("Message stream modified") when the session key
  is aes256, so the generated ``krb5.conf`` limits clients to
  aes128-cts-hmac-sha1-96, as MiniKdc's own ``krb5.conf`` does for Java.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kafkalite.testing import keytab as keytabs
from kafkalite.testing.jarsets import JarSet, JarSetLock
from kafkalite.testing.java import JavaRuntime, find_javac
from kafkalite.testing.services import JavaService

DEFAULT_MINIKDC_VERSION = "4.3.1"
"""The Kafka release whose test jar provides MiniKdc."""

KRB5_LOGIN_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
BROKER_SERVICE = "kafka"
_RUNNING_AT = re.compile(r"Running at\s*:\s*(?P<host>[^\s:]+):(?P<port>\d+)")
_LAUNCHER_READY = "KDC ready; minimum ticket lifetime: "
LAUNCHER_SOURCE = Path(__file__).parent / "java" / "MiniKdcLauncher.java"


class MiniKdc(JavaService):
    """Kafka's MiniKdc on a loopback port.

    Args:
        principals: principals to create, without the realm (``"alice"``,
            ``"kafka/127.0.0.1"``); each gets a keytab (:meth:`keytab`).
        max_ticket_lifetime_ms: the KDC's longest ticket (MiniKdc's default: a day;
            ApacheDS refuses anything under 4 minutes, see the module docstring).
        min_ticket_lifetime_ms: lower ApacheDS's 4-minute minimum and 5-minute clock
            skew to this; well below ``max_ticket_lifetime_ms``
            for short tickets (a service ticket needs a TGT with more than this left).
        run_dir / tied / java: as for :class:`~kafkalite.testing.services.JavaService`.

    Attributes:
        realm: ``EXAMPLE.COM``.
        port: the KDC's TCP port (once started).
    """

    kind = "kdc"

    def __init__(self, principals: Sequence[str] = (f"{BROKER_SERVICE}/127.0.0.1", "alice", "bob"), *,
                 version: str = DEFAULT_MINIKDC_VERSION, max_ticket_lifetime_ms: int | None = None,
                 min_ticket_lifetime_ms: int | None = None, run_dir: Path | None = None, tied: bool = True, java: JavaRuntime | None = None) -> None:
        super().__init__(JarSetLock.load("minikdc", version), run_dir=run_dir, tied=tied, java=java)
        self.principals = tuple(principals)
        self.realm = "EXAMPLE.COM"
        self.host = "127.0.0.1"
        self.max_ticket_lifetime_ms = max_ticket_lifetime_ms
        self.min_ticket_lifetime_ms = min_ticket_lifetime_ms
        self.port: int | None = None

    def __repr__(self) -> str:
        return f"<MiniKdc {self.realm} {self.host}:{self.port or '?'}>"

    # -- files -------------------------------------------------------------------------

    @property
    def work_dir(self) -> Path:
        return self.run_dir / "kdc"

    @property
    def all_keytab(self) -> Path:
        return self.run_dir / "all.keytab"

    @property
    def krb5_conf(self) -> Path:
        """The ``krb5.conf`` for clients (``KRB5_CONFIG``) and brokers."""
        return self.run_dir / "krb5.conf"

    def principal(self, name: str) -> str:
        """``"alice"`` -> ``"alice@EXAMPLE.COM"``."""
        return name if "@" in name else f"{name}@{self.realm}"

    def keytab(self, name: str) -> Path:
        """The keytab holding only ``name``'s keys."""
        path = self.run_dir / "keytabs" / (name.replace("/", "_") + ".keytab")
        if not path.exists():
            keytabs.extract(self.all_keytab, self.principal(name), path)
        return path

    def wrong_keytab(self, name: str) -> Path:
        """A keytab for ``name`` whose keys are not the KDC's (a stale or foreign keytab)."""
        return keytabs.random_keytab(self.run_dir / "keytabs" / f"wrong-{name.replace('/', '_')}.keytab",
                                     self.principal(name))

    def unknown_principal_keytab(self, name: str) -> Path:
        """A keytab for a principal this KDC does not know."""
        return keytabs.random_keytab(self.run_dir / "keytabs" / f"unknown-{name.replace('/', '_')}.keytab",
                                     self.principal(name))

    def environment_for_clients(self) -> dict[str, str]:
        """``{"KRB5_CONFIG": ...}``: what a process using MIT Kerberos needs to find this KDC."""
        return {"KRB5_CONFIG": str(self.krb5_conf)}

    def jaas_config(self, name: str, keytab: Path | None = None) -> str:
        """A Java ``sasl.jaas.config`` line logging ``name`` in from its keytab."""
        return (f'{KRB5_LOGIN_MODULE} required useKeyTab=true storeKey=true '
                f'keyTab="{keytab or self.keytab(name)}" principal="{self.principal(name)}";')

    def client_settings(self, name: str, *, keytab: Path | None = None, **settings: Any) -> dict[str, Any]:
        """kafkalite settings that sign ``name`` in with GSSAPI from its keytab (or
        ``keytab``); ``settings`` (Java names) are added or override."""
        return {"sasl.mechanism": "GSSAPI", "sasl.kerberos.service.name": BROKER_SERVICE,
                "sasl.jaas.config": self.jaas_config(name, keytab), **settings}

    def kinit(self, name: str, ccache: Path, *, keytab: Path | None = None) -> Path:
        """Put a TGT for ``name`` into the ticket cache ``ccache`` with MIT's ``kinit``."""
        kinit = shutil.which("kinit")
        if kinit is None:
            raise RuntimeError("kinit not found: install MIT Kerberos' tools (Debian: krb5-user)")
        done = subprocess.run([kinit, "-k", "-t", str(keytab or self.keytab(name)), "-c", f"FILE:{ccache}",
                               self.principal(name)], env={**os.environ, **self.environment_for_clients()},
                              capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise RuntimeError(f"kinit {self.principal(name)} failed: {done.stderr.strip()}")
        return ccache

    # -- JavaService hooks ---------------------------------------------------------------

    def command(self) -> list[str]:
        command = super().command()
        # The launcher's class directory joins the class path and replaces the main class.
        classes = self._compile_launcher()
        cp = command.index("-cp")
        command[cp + 1] = f"{command[cp + 1]}{os.pathsep}{classes}"
        command[command.index(self.lock.main_class)] = LAUNCHER_SOURCE.stem
        return command

    def _compile_launcher(self) -> Path:
        out = self.run_dir / "launcher"
        if (out / f"{LAUNCHER_SOURCE.stem}.class").exists():
            return out
        out.mkdir(parents=True, exist_ok=True)
        classpath = os.pathsep.join(str(p) for p in JarSet(self.lock).ensure().classpath())
        done = subprocess.run([str(find_javac(self.java)), "-nowarn", "-cp", classpath, "-d", str(out),
                               str(LAUNCHER_SOURCE)], capture_output=True, text=True, timeout=180)
        if done.returncode != 0:
            raise RuntimeError(f"compiling {LAUNCHER_SOURCE.name} failed: {done.stderr.strip()}")
        return out

    def prepare(self) -> None:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        props = {"kdc.bind.address": self.host, "kdc.port": "0"}
        if self.max_ticket_lifetime_ms is not None:
            props["max.ticket.lifetime"] = str(self.max_ticket_lifetime_ms)
            props["max.renewable.lifetime"] = str(self.max_ticket_lifetime_ms * 2)
        if self.min_ticket_lifetime_ms is not None:
            props["min.ticket.lifetime"] = str(self.min_ticket_lifetime_ms)
        (self.run_dir / "kdc.properties").write_text("".join(f"{k}={v}\n" for k, v in props.items()))

    def arguments(self) -> list[str]:
        return [str(self.work_dir), str(self.run_dir / "kdc.properties"), str(self.all_keytab), *self.principals]

    def probe(self) -> bool:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return False
        found = _RUNNING_AT.search(text)
        if found is None or not self.all_keytab.exists():
            return False
        if _LAUNCHER_READY not in text:
            return False
        self.port = int(found["port"])
        return True

    def wait_ready(self, timeout: float = 120.0) -> MiniKdc:
        """Wait for the KDC, then write ``krb5.conf`` and one keytab per principal."""
        super().wait_ready(timeout)
        self.krb5_conf.write_text(krb5_conf(self.realm, self.host, self.port or 0))
        for name in self.principals:
            self.keytab(name)
        return self


def krb5_conf(realm: str, host: str, port: int, extra: Mapping[str, str] | None = None) -> str:
    """The ``krb5.conf`` of the test realm (read by MIT Kerberos and by Java).

    Host names are used as given (no DNS canonicalisation, no reverse lookup), so a
    broker at ``127.0.0.1`` is ``kafka/127.0.0.1``; TCP only; aes128 only (see the
    module docstring).
    """
    libdefaults = {
        "default_realm": realm,
        "dns_lookup_kdc": "false",
        "dns_lookup_realm": "false",
        "dns_canonicalize_hostname": "false",
        "rdns": "false",
        "udp_preference_limit": "1",
        "default_tkt_enctypes": "aes128-cts-hmac-sha1-96",
        "default_tgs_enctypes": "aes128-cts-hmac-sha1-96",
        "permitted_enctypes": "aes128-cts-hmac-sha1-96",
        **(extra or {}),
    }
    lines = ["[libdefaults]", *(f" {k} = {v}" for k, v in libdefaults.items()),
             "[realms]", f" {realm} = {{", f"  kdc = {host}:{port}", " }", ""]
    return "\n".join(lines)
