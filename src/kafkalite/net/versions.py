"""API version negotiation: the highest version both sides speak, per API.

A broker's ApiVersions response lists, for each API key, the range it supports; the
generated messages know the range this client supports. For every request the client
uses ``min(client max, broker max)`` provided it is not below either minimum.

Example::

    table = ApiVersionTable.from_response(api_versions_response)
    table.version_for(FetchRequest)          # e.g. 18 against Kafka 4.4.0
    table.supports(ShareFetchRequest)        # False on a 3.9 broker

An answer damaged on the way can still decode (the network-fault proxy of
kafkalite.testing flips bytes of it): an API that every Kafka broker serves then seems
missing, and :meth:`ApiVersionTable.version_for` says so with a :class:`ProtocolError`
rather than :class:`UnsupportedVersionForClientError`, for the connection to close and the
next one to ask again (:meth:`BrokerConnection.api_version
<kafkalite.net.transport.BrokerConnection.api_version>`).
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkalite.errors import ProtocolError, UnsupportedVersionForClientError
from kafkalite.protocol.message import Message
from kafkalite.protocol.messages import API_NAMES
from kafkalite.protocol.messages.api_versions import ApiVersionsResponse

#: API keys every Kafka broker serves: Produce, Fetch, ListOffsets and Metadata (since
#: 0.8; every ApiVersions answer, from 0.10.0 on, lists them). An answer without one of
#: them, or with an empty range for it, was damaged on the way.
ALWAYS_SERVED = frozenset({0, 1, 2, 3})


@dataclass(frozen=True)
class VersionRange:
    min: int
    max: int


class ApiVersionTable:
    """What one broker supports, and the negotiated version per request class."""

    def __init__(self, broker_ranges: dict[int, VersionRange], finalized_features: dict[str, int] | None = None,
                 supported_features: dict[str, VersionRange] | None = None) -> None:
        self.broker_ranges = broker_ranges
        self.finalized_features = finalized_features or {}
        self.supported_features = supported_features or {}
        self._cache: dict[int, int | None] = {}

    @classmethod
    def from_response(cls, response: ApiVersionsResponse) -> ApiVersionTable:
        ranges = {k.api_key: VersionRange(k.min_version, k.max_version) for k in response.api_keys}
        finalized = {f.name: f.max_version_level for f in response.finalized_features or []}
        supported = {f.name: VersionRange(f.min_version, f.max_version) for f in response.supported_features or []}
        return cls(ranges, finalized, supported)

    def negotiate(self, request_class: type[Message]) -> int | None:
        """The version to use for ``request_class``, or None if there is none."""
        key = request_class.API_KEY
        if key in self._cache:
            return self._cache[key]
        broker = self.broker_ranges.get(key)
        version = None
        if broker is not None:
            high = min(request_class.MAX_VERSION, broker.max)
            if high >= max(request_class.MIN_VERSION, broker.min):
                version = high
        self._cache[key] = version
        return version

    def supports(self, request_class: type[Message], min_version: int = 0) -> bool:
        version = self.negotiate(request_class)
        return version is not None and version >= min_version

    def version_for(self, request_class: type[Message], min_version: int = 0) -> int:
        """Like :meth:`negotiate` but raises when the broker has no usable version:
        :class:`UnsupportedVersionForClientError`, or :class:`ProtocolError` when the
        answer cannot be a broker's (no range, or an empty one, for an API of
        :data:`ALWAYS_SERVED`): a damaged ApiVersions answer, worth asking again."""
        version = self.negotiate(request_class)
        if version is None or version < min_version:
            name = API_NAMES.get(request_class.API_KEY, request_class.__name__)
            broker = self.broker_ranges.get(request_class.API_KEY)
            if request_class.API_KEY in ALWAYS_SERVED and (broker is None or broker.min > broker.max):
                said = f"lists no {name}" if broker is None else f"gives {name} the empty range {broker.min}-{broker.max}"
                raise ProtocolError(f"the broker's ApiVersions answer {said}, an API every Kafka broker serves: "
                                    "the answer was damaged")
            theirs = f"{broker.min}-{broker.max}" if broker else "none"
            need = f"{max(request_class.MIN_VERSION, min_version)}-{request_class.MAX_VERSION}"
            raise UnsupportedVersionForClientError(
                f"the broker supports {name} versions {theirs}; this client needs {need}"
            )
        return version

    def feature_level(self, name: str) -> int:
        """Finalized level of a cluster feature (e.g. 'transaction.version'), 0 if absent."""
        return self.finalized_features.get(name, 0)
