"""format("kafkalite") signed in through ``kafka.*`` options with each enterprise sign-in:
OIDC (OAUTHBEARER, KIP-768: every Spark task's client fetches its token from the
provider itself), Kerberos (GSSAPI from a keytab: every task's client logs in itself;
the executors find the realm through ``KRB5_CONFIG`` in their environment, as
docs/security.md advises with ``spark.executorEnv.KRB5_CONFIG``) and PKCS#12 key and
trust stores (mutual TLS)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kafkalite import Consumer, TopicPartition

pytestmark = [pytest.mark.broker, pytest.mark.timeout(600)]  # generous: a Spark session and sign-in services may start here


def oidc_options(listener: Any, provider: Any) -> dict[str, str]:
    settings = provider.client_settings("spark-app", "spark-secret")
    options = {f"kafka.{k}": str(v) for k, v in settings.items()}
    options.update({"kafka.bootstrap.servers": listener.bootstrap, "kafka.security.protocol": "SASL_PLAINTEXT"})
    return options


@pytest.fixture(params=["oidc", "gssapi", "pkcs12"])
def signed_in(request: pytest.FixtureRequest, spark: Any) -> Iterator[tuple[Any, dict[str, str]]]:
    """(listener, Spark options) of one way to sign in."""
    if request.param == "oidc":
        listener = request.getfixturevalue("kafka_broker_oauth")
        yield listener, oidc_options(listener, request.getfixturevalue("oidc_provider"))
        return
    if request.param == "gssapi":
        listener, kdc = request.getfixturevalue("kafka_broker_kerberos"), request.getfixturevalue("kerberos_kdc")
        settings = kdc.client_settings("alice")
        options = {f"kafka.{k}": str(v) for k, v in settings.items()}
        options.update({"kafka.bootstrap.servers": listener.bootstrap, "kafka.security.protocol": "SASL_PLAINTEXT"})
        # The executors' environment: spark.executorEnv.KRB5_CONFIG fills
        # SparkContext.environment, which a Python data source's workers get from its
        # registration; on this shared session (made before the KDC existed) the same is
        # done at run time, then undone.
        from pyspark_kafkalite import KafkaLiteDataSource

        environment = spark.sparkContext.environment
        before = environment.get("KRB5_CONFIG")
        environment["KRB5_CONFIG"] = str(kdc.krb5_conf)
        spark.dataSource.register(KafkaLiteDataSource)
        try:
            yield listener, options
        finally:
            if before is None:
                environment.pop("KRB5_CONFIG", None)
            else:
                environment["KRB5_CONFIG"] = before
            spark.dataSource.register(KafkaLiteDataSource)
        return
    listener = request.getfixturevalue("kafka_broker_mtls")
    pki = listener.tls
    yield listener, {
        "kafka.bootstrap.servers": listener.bootstrap, "kafka.security.protocol": "SSL",
        "kafka.ssl.keystore.type": "PKCS12", "kafka.ssl.keystore.location": str(pki.client_keystore_p12),
        "kafka.ssl.keystore.password": pki.store_password, "kafka.ssl.truststore.type": "PKCS12",
        "kafka.ssl.truststore.location": str(pki.truststore_p12), "kafka.ssl.truststore.password": pki.store_password}


def test_write_then_read_signed_in(spark: Any, signed_in: tuple[Any, dict[str, str]]) -> None:
    from pyspark.sql.types import BinaryType, StringType, StructField, StructType

    listener, options = signed_in
    topic = listener.create_topic(f"spark-signin-{options['kafka.security.protocol'].lower()}-"
                                  f"{options.get('kafka.sasl.mechanism', 'mtls').lower()}", 2)
    schema = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    rows = [(f"k{i}", f"v{i}".encode()) for i in range(50)]
    (spark.createDataFrame(rows, schema).repartition(2).write.format("kafkalite")
     .options(**options).option("topic", topic).mode("append").save())

    # Written through the signed-in listener: read back with a plain consumer on the back door.
    with Consumer({"bootstrap.servers": listener.broker.bootstrap}) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(2)])
        consumer.seek_to_beginning()
        got: list[Any] = []
        for _ in range(60):
            got += consumer.poll(0.5)
            if len(got) >= 50:
                break
    assert sorted(r.value for r in got) == sorted(v for _, v in rows)

    df = spark.read.format("kafkalite").options(**options).option("subscribe", topic).load()
    read = sorted((r.key.decode(), r.value) for r in df.select("key", "value").collect())
    assert read == sorted(rows)
