"""Arrow column helpers with a real registry: a column mixing writer schema versions
comes out in the reader's shape; struct columns are encoded under a registered subject
and read back by the record serdes."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kafkalite.serialization import (
    AvroDeserializer,
    AvroSerializer,
    SchemaRegistryClient,
    UnknownSchemaIdError,
)
from kafkalite.serialization.arrow import (
    avro_to_arrow_schema,
    avro_to_struct,
    decode_column,
    struct_to_avro,
)
from kafkalite.serialization.wire import frame
from tests.helpers.serdes import avro_record

V1 = avro_record("Click", [("page", "string"), ("ms", "long")])
V2 = avro_record("Click", [("page", "string"), ("ms", "long"), ("referrer", ["null", "string"], None)])


def test_column_of_mixed_versions_reads_into_the_reader_schema(unique_topic: str, sr_conf: dict) -> None:
    old = AvroSerializer(V1, sr_conf).serialize(unique_topic, {"page": "/a", "ms": 5})
    new = AvroSerializer(V2, sr_conf).serialize(unique_topic, {"page": "/b", "ms": 7, "referrer": "/a"})
    column = pa.array([old, None, new], type=pa.binary())
    structs = avro_to_struct(column, V2, registry=sr_conf)
    assert structs.type == avro_to_arrow_schema(V2)
    assert structs.to_pylist() == [{"page": "/a", "ms": 5, "referrer": None}, None,
                                   {"page": "/b", "ms": 7, "referrer": "/a"}]
    # Without a reader schema, the first record's writer schema is the shape.
    assert avro_to_struct(pa.array([old]), registry=sr_conf).to_pylist() == [{"page": "/a", "ms": 5}]
    batch = decode_column(pa.record_batch({"value": column}), reader_schema=V2, registry=sr_conf)
    assert batch.column(0).to_pylist()[2]["referrer"] == "/a"
    with pytest.raises(UnknownSchemaIdError):
        avro_to_struct(pa.array([frame(1_999_999_999, b"\x00")]), V2, registry=sr_conf)


def test_struct_column_encoded_under_a_subject(unique_topic: str, sr_conf: dict,
                                               sr_client: SchemaRegistryClient) -> None:
    structs = pa.array([{"page": "/x", "ms": 1}, {"page": "/y", "ms": 2}], type=avro_to_arrow_schema(V1))
    encoded = struct_to_avro(structs, V1, registry=sr_client, subject=f"{unique_topic}-value")
    assert sr_client.get_versions(f"{unique_topic}-value") == [1]
    reader = AvroDeserializer(sr_conf)
    assert [reader.deserialize(unique_topic, b) for b in encoded.to_pylist()] == structs.to_pylist()
    # The same bytes as the record serializer writes.
    assert encoded[0].as_py() == AvroSerializer(V1, sr_conf).serialize(unique_topic, {"page": "/x", "ms": 1})
