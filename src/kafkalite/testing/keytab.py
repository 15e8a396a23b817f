"""Kerberos keytab files (MIT format 0x0502): read, split per principal, write.

The test KDC (Kafka's MiniKdc) writes one keytab holding every principal it created;
the harness hands each client and the broker a keytab of its own, and makes the
keytabs of bad-input tests: a *wrong* keytab (the principal with keys the KDC does not
have) and one for a principal the KDC does not know.

>>> entry = KeytabEntry("EXAMPLE.COM", ("alice",), kvno=1, enctype=17, key=bytes(16))
>>> parse_keytab(render_keytab([entry]))[0].principal
'alice@EXAMPLE.COM'
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

_VERSION = b"\x05\x02"
_KRB5_NT_PRINCIPAL = 1

KEY_LENGTHS = {17: 16, 18: 32, 16: 24, 23: 16, 3: 8}
"""Key length by encryption type: aes128-cts-hmac-sha1-96, aes256-..., des3, rc4, des."""


@dataclass(frozen=True)
class KeytabEntry:
    """One key of one principal (``components`` are the name parts: ``("kafka", "host")``)."""

    realm: str
    components: tuple[str, ...]
    kvno: int
    enctype: int
    key: bytes
    timestamp: int = 0
    name_type: int = _KRB5_NT_PRINCIPAL

    @property
    def principal(self) -> str:
        return "/".join(self.components) + "@" + self.realm


def parse_keytab(data: bytes) -> list[KeytabEntry]:
    """The entries of a keytab (holes skipped)."""
    if data[:2] != _VERSION:
        raise ValueError(f"not an MIT keytab (version bytes {data[:2]!r})")
    entries, pos = [], 2
    while pos + 4 <= len(data):
        (size,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if size < 0:  # a hole left by a deleted entry
            pos += -size
            continue
        record, pos = data[pos:pos + size], pos + size
        entries.append(_parse_entry(record))
    return entries


def _parse_entry(record: bytes) -> KeytabEntry:
    pos = 0

    def counted() -> bytes:
        nonlocal pos
        (length,) = struct.unpack_from(">H", record, pos)
        value = record[pos + 2:pos + 2 + length]
        pos += 2 + length
        return value

    (count,) = struct.unpack_from(">H", record, pos)
    pos += 2
    realm = counted().decode()
    components = tuple(counted().decode() for _ in range(count))
    name_type, timestamp, vno8 = struct.unpack_from(">IIB", record, pos)
    pos += 9
    (enctype,) = struct.unpack_from(">H", record, pos)
    pos += 2
    key = counted()
    kvno = struct.unpack_from(">I", record, pos)[0] if pos + 4 <= len(record) else vno8
    return KeytabEntry(realm, components, kvno, enctype, key, timestamp, name_type)


def render_keytab(entries: Iterable[KeytabEntry]) -> bytes:
    """Keytab bytes holding ``entries``."""
    out = bytearray(_VERSION)
    for e in entries:
        body = bytearray(struct.pack(">H", len(e.components)))
        for part in (e.realm, *e.components):
            raw = part.encode()
            body += struct.pack(">H", len(raw)) + raw
        body += struct.pack(">IIBH", e.name_type, e.timestamp, e.kvno & 0xFF, e.enctype)
        body += struct.pack(">H", len(e.key)) + e.key + struct.pack(">I", e.kvno)
        out += struct.pack(">i", len(body)) + body
    return bytes(out)


def split_principal(principal: str) -> tuple[tuple[str, ...], str]:
    """``"kafka/host@REALM"`` -> ``(("kafka", "host"), "REALM")``."""
    name, _, realm = principal.partition("@")
    return tuple(name.split("/")), realm


def write_keytab(path: Path, entries: Iterable[KeytabEntry]) -> Path:
    """Write a keytab readable by its owner only (it holds secrets)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(render_keytab(entries))
    return path


def extract(source: Path, principal: str, target: Path) -> Path:
    """Copy the keys of one principal from ``source`` into a keytab of its own."""
    entries = [e for e in parse_keytab(source.read_bytes()) if e.principal == principal]
    if not entries:
        raise KeyError(f"{source} holds no key for {principal}")
    return write_keytab(target, entries)


def random_keytab(target: Path, principal: str, enctypes: Iterable[int] = (17, 18), kvno: int = 0) -> Path:
    """A keytab for ``principal`` with random keys: the KDC cannot have them (a wrong
    keytab, or one for a principal it does not know)."""
    components, realm = split_principal(principal)
    return write_keytab(target, [KeytabEntry(realm, components, kvno, t, os.urandom(KEY_LENGTHS[t]))
                                 for t in enctypes])


def expire_ticket_cache(path: Path, *, seconds_ago: int = 60) -> int:
    """Make every ticket in the MIT ticket cache file ``path`` look expired.

    The test KDC issues tickets of at least 4 minutes (see :mod:`kafkalite.testing.kdc`),
    so a test of an expired ``kinit`` ticket rewrites the times the cache keeps for each
    ticket (the times MIT Kerberos checks before using it) to end ``seconds_ago``
    seconds ago. Returns the number of tickets changed.
    """
    import time

    data = bytearray(path.read_bytes())
    if data[:2] != b"\x05\x04":
        raise ValueError(f"{path}: not a version 4 MIT ticket cache")
    (header_len,) = struct.unpack_from(">H", data, 2)
    pos = 4 + header_len

    def skip_data(p: int) -> int:
        length: int = struct.unpack_from(">I", data, p)[0]
        return p + 4 + length

    def skip_principal(p: int) -> tuple[int, str]:
        (count,) = struct.unpack_from(">I", data, p + 4)
        p = skip_data(p + 8)  # name type, count, realm
        start = p
        for _ in range(count):
            p = skip_data(p)
        return p, bytes(data[start:p]).decode(errors="replace")

    pos, _ = skip_principal(pos)  # the default principal
    end = int(time.time()) - seconds_ago
    changed = 0
    while pos < len(data):
        pos, _ = skip_principal(pos)
        pos, server = skip_principal(pos)
        pos = skip_data(pos + 2)  # keyblock: enctype, data
        if "X-CACHECONF" not in server:
            struct.pack_into(">IIII", data, pos, end - 600, end - 600, end, end)
            changed += 1
        pos += 16 + 1 + 4  # times, is_skey, flags
        for _ in range(2):  # addresses, authdata: count then (type, data)*
            (count,) = struct.unpack_from(">I", data, pos)
            pos += 4
            for _ in range(count):
                pos = skip_data(pos + 2)
        pos = skip_data(skip_data(pos))  # ticket, second ticket
    path.write_bytes(bytes(data))
    return changed
