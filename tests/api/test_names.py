"""DNS-1123 names, label keys and values, annotation size: the API server's rules."""

from __future__ import annotations

import pytest

from kubehpc.api import names


@pytest.mark.parametrize("name", ["a", "my-job", "example.com", "a.b-c.d", "0abc", "a" * 253])
def test_valid_subdomains(name: str) -> None:
    assert names.dns1123_subdomain(name) == []


@pytest.mark.parametrize("name", ["My-Job", "-a", "a-", "a_b", "a..b", ".a", "a" * 254, ""])
def test_invalid_subdomains(name: str) -> None:
    assert names.dns1123_subdomain(name)


def test_subdomain_message_reads_like_the_api_server() -> None:
    (message,) = names.dns1123_subdomain("Bad_Name")
    assert message.startswith(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
        "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
        "validation is '"
    )


@pytest.mark.parametrize("name", ["default", "team-a", "a" * 63])
def test_valid_labels(name: str) -> None:
    assert names.dns1123_label(name) == []


@pytest.mark.parametrize("name", ["a.b", "A", "a" * 64, "-x"])
def test_invalid_labels(name: str) -> None:
    assert names.dns1123_label(name)


def test_dns1035_label_must_start_with_a_letter() -> None:
    assert names.dns1035_label("svc-1") == []
    assert names.dns1035_label("1svc")


@pytest.mark.parametrize(
    "key", ["app", "app.kubernetes.io/name", "kueue.x-k8s.io/queue-name", "Key_1", "a/b"]
)
def test_valid_label_keys(key: str) -> None:
    assert names.qualified_name(key) == []


@pytest.mark.parametrize("key", ["", "/a", "a/", "a/b/c", "Bad_Prefix/a", "-a", "a" * 64, "x/" + "a" * 64])
def test_invalid_label_keys(key: str) -> None:
    assert names.qualified_name(key)


@pytest.mark.parametrize("value", ["", "v1", "a.b_c-d", "a" * 63])
def test_valid_label_values(value: str) -> None:
    assert names.label_value(value) == []


@pytest.mark.parametrize("value", ["-a", "a-", "a b", "a" * 64, "a/b"])
def test_invalid_label_values(value: str) -> None:
    assert names.label_value(value)


def test_annotations_may_total_256_kib() -> None:
    assert names.annotations_size({"k": "x" * (256 * 1024 - 1)}) == []
    assert names.annotations_size({"k": "x" * (256 * 1024)}) == ["Too long: must have at most 262144 bytes"]


def test_label_message_lists_examples_as_the_api_server_does() -> None:
    (message,) = names.dns1123_label("A")
    assert message == (
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
        "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
        "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
    )
