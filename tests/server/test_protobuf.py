"""Kubernetes protobuf request bodies, as kubectl create namespace/configmap/secret sends them."""

from __future__ import annotations

import pytest

from kubehpc.api.errors import UnsupportedMediaType
from kubehpc.server.protobuf import MAGIC, decode_object


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def entry(key: str, value: bytes) -> bytes:
    return field(1, key.encode()) + field(2, value)


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = field(1, api_version.encode()) + field(2, kind.encode())
    return MAGIC + field(1, type_meta) + field(2, raw)


def test_configmap_decodes_with_empty_fields_omitted() -> None:
    meta = field(1, b"cm") + field(2, b"") + field(3, b"ns") + field(8, b"") + field(11, entry("app", b"x"))
    raw = field(1, meta) + field(2, entry("a", b"b")) + field(2, entry("c", b""))
    obj = decode_object(envelope("v1", "ConfigMap", raw))
    assert obj == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "ns", "labels": {"app": "x"}},
        "data": {"a": "b", "c": ""},
    }


def test_secret_data_is_base64_as_in_json() -> None:
    raw = field(1, field(1, b"s")) + field(2, entry("k", b"\x00\xff")) + field(3, b"Opaque")
    obj = decode_object(envelope("v1", "Secret", raw))
    assert obj["data"] == {"k": "AP8="} and obj["type"] == "Opaque"


def test_kind_without_a_table_is_a_415_that_names_json() -> None:
    with pytest.raises(UnsupportedMediaType, match="application/json"):
        decode_object(envelope("v1", "Pod", b""))
