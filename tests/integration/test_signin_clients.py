"""Every sign-in works in every client: Kerberos (GSSAPI keytab), OIDC (OAUTHBEARER
client credentials) and PKCS#12 key/trust stores (mutual TLS) in the admin client, the
asyncio producer and consumer, the share consumer and the console tools
(``--command-config`` as Kafka's tools take it). Producer and consumer (blocking) are
covered by the mechanism's own tests; Spark by tests/spark/test_spark_signin.py.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from kafkalite import AdminClient, NewTopic, ShareConsumer
from kafkalite.aio import Consumer as AioConsumer
from kafkalite.aio import Producer as AioProducer
from kafkalite.testing.topics import unique_topic_name
from tests.integration.admin_support import kafkalite
from tests.integration.share_support import configure_group

pytestmark = pytest.mark.broker


@pytest.fixture(params=["gssapi", "oidc", "pkcs12"])
def signed_in(request) -> tuple[Any, dict[str, Any]]:
    """(listener, client settings) of one way to sign in."""
    if request.param == "gssapi":
        listener, kdc = request.getfixturevalue("kafka_broker_kerberos"), request.getfixturevalue("kerberos_kdc")
        return listener, listener.client_config(**kdc.client_settings("alice"))
    if request.param == "oidc":
        listener, oidc = request.getfixturevalue("kafka_broker_oauth"), request.getfixturevalue("oidc_provider")
        return listener, listener.client_config(**oidc.client_settings("clients-app", "clients-secret"))
    listener = request.getfixturevalue("kafka_broker_mtls")
    pki = listener.tls
    cfg = {"bootstrap.servers": listener.bootstrap, "security.protocol": "SSL",
           "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(pki.client_keystore_p12),
           "ssl.keystore.password": pki.store_password, "ssl.truststore.type": "PKCS12",
           "ssl.truststore.location": str(pki.truststore_p12), "ssl.truststore.password": pki.store_password}
    return listener, cfg


def test_admin_client(signed_in) -> None:
    _, cfg = signed_in
    topic = unique_topic_name("signin-admin")
    with AdminClient(cfg) as admin:
        admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)]).all()
        assert topic in admin.list_topics()
        assert admin.describe_cluster().nodes
        admin.delete_topics([topic]).all()


async def test_asyncio_producer_and_consumer(signed_in) -> None:
    listener, cfg = signed_in
    topic = listener.create_topic(unique_topic_name("signin-aio"), 1)
    async with AioProducer(cfg) as producer:
        for i in range(3):
            await producer.send_and_wait(topic, b"aio-%d" % i)
    got: list[bytes] = []
    async with AioConsumer(cfg, group_id=f"{topic}-g", auto_offset_reset="earliest") as consumer:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(got) < 3 and time.monotonic() < deadline:
            got += [r.value for r in await consumer.poll(1.0)]
    assert got == [b"aio-0", b"aio-1", b"aio-2"]


def test_share_consumer(signed_in) -> None:
    listener, cfg = signed_in
    topic = listener.create_topic(unique_topic_name("signin-share"), 1)
    group = f"{topic}-share"
    configure_group(listener.broker.bootstrap, group)  # over the broker's PLAINTEXT side
    kafkalite("produce", "--bootstrap-server", listener.broker.bootstrap, "--topic", topic, input="s1\ns2\n")
    got: list[bytes] = []
    with ShareConsumer(cfg, group_id=group) as consumer:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(got) < 2 and time.monotonic() < deadline:
            got += [r.value for r in consumer.poll(1.0)]
    assert sorted(got) == [b"s1", b"s2"]


def test_console_tools_with_command_config(signed_in, tmp_path) -> None:
    """A Java-style client.properties handed to ``kafkalite produce`` / ``consume``."""
    listener, cfg = signed_in
    topic = listener.create_topic(unique_topic_name("signin-cli"), 1)
    properties = tmp_path / "client.properties"
    properties.write_text("".join(f"{k}={v}\n" for k, v in cfg.items() if k != "bootstrap.servers"))
    common = ["--bootstrap-server", listener.bootstrap, "--command-config", str(properties), "--topic", topic]
    done = kafkalite("produce", *common, input="c1\nc2\n")
    assert done.returncode == 0, done.stderr
    done = kafkalite("consume", *common, "--from-beginning", "--max-messages", "2")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["c1", "c2"]
