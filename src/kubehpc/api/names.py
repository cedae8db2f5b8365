"""Name, label and annotation rules of Kubernetes, with the API server's messages.

Every function returns a list of problems (empty when the value is valid), like
``k8s.io/apimachinery/pkg/util/validation``, so callers can attach them to a field path.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63
QUALIFIED_NAME_MAX = 63
ANNOTATIONS_TOTAL_MAX = 256 * 1024

_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _LABEL_FMT + r"(\." + _LABEL_FMT + ")*"
_QUALIFIED_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _QUALIFIED_FMT + ")?"

_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_LABEL_RE = re.compile(_LABEL_FMT)
_DNS1035_RE = re.compile(_DNS1035_FMT)
_SUBDOMAIN_RE = re.compile(_SUBDOMAIN_FMT)
_QUALIFIED_RE = re.compile(_QUALIFIED_FMT)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery's ``RegexError``, spacing included (``'my-name',  or '123-abc',``)."""
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len(n: int) -> str:
    return f"must be no more than {n} characters"


def dns1123_label(value: str) -> list[str]:
    """Namespaces, Services and other names that become a single DNS label."""
    errs = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(_max_len(DNS1123_LABEL_MAX))
    if not _LABEL_RE.fullmatch(value):
        errs.append(
            _regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                "and must start and end with an alphanumeric character",
                _LABEL_FMT,
                "my-name",
                "123-abc",
            )
        )
    return errs


def dns1035_label(value: str) -> list[str]:
    """Service names: a DNS label that starts with a letter."""
    errs = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(_max_len(DNS1123_LABEL_MAX))
    if not _DNS1035_RE.fullmatch(value):
        errs.append(
            _regex_error(
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
                "an alphabetic character, and end with an alphanumeric character",
                _DNS1035_FMT,
                "my-name",
                "abc-123",
            )
        )
    return errs


def dns1123_subdomain(value: str) -> list[str]:
    """Most object names (Pods, Jobs, ConfigMaps, ...)."""
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(_max_len(DNS1123_SUBDOMAIN_MAX))
    if not _SUBDOMAIN_RE.fullmatch(value):
        errs.append(
            _regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                "'-' or '.', and must start and end with an alphanumeric character",
                _SUBDOMAIN_FMT,
                "example.com",
            )
        )
    return errs


def is_dns1123_subdomain(value: str) -> bool:
    """:func:`dns1123_subdomain` as a yes or no, without building the messages."""
    return len(value) <= DNS1123_SUBDOMAIN_MAX and _SUBDOMAIN_RE.fullmatch(value) is not None


def qualified_name(value: str) -> list[str]:
    """Label and annotation keys: an optional DNS subdomain prefix, '/', and a name."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + e for e in dns1123_subdomain(prefix))
    else:
        return [
            _regex_error(
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must "
                "start and end with an alphanumeric character",
                _QUALIFIED_FMT,
                "MyName",
                "my.name",
                "123-abc",
            )
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX:
        errs.append("name part " + _max_len(QUALIFIED_NAME_MAX))
    if name and not _QUALIFIED_RE.fullmatch(name):
        errs.append(
            "name part "
            + _regex_error(
                "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                "with an alphanumeric character",
                _QUALIFIED_FMT,
                "MyName",
                "my.name",
                "123-abc",
            )
        )
    return errs


def label_value(value: str) -> list[str]:
    errs = []
    if len(value) > LABEL_VALUE_MAX:
        errs.append(_max_len(LABEL_VALUE_MAX))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(
            _regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
                "or '.', and must start and end with an alphanumeric character",
                _LABEL_VALUE_FMT,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return errs


# Label keys and values repeat across thousands of objects and selectors (app=...,
# batch.kubernetes.io/controller-uid=...): the remembered forms check each distinct string once.
@functools.lru_cache(maxsize=8192)
def qualified_name_remembered(value: str) -> tuple[str, ...]:
    """:func:`qualified_name`, remembered per value."""
    return tuple(qualified_name(value))


@functools.lru_cache(maxsize=1024)
def dns1123_label_remembered(value: str) -> tuple[str, ...]:
    """:func:`dns1123_label`, remembered per value: namespaces, checked on every write, are few."""
    return tuple(dns1123_label(value))


@functools.lru_cache(maxsize=8192)
def label_value_remembered(value: str) -> tuple[str, ...]:
    """:func:`label_value`, remembered per value."""
    return tuple(label_value(value))


def annotations_size(annotations: Mapping[str, Any]) -> list[str]:
    """The API server caps the total size of keys and values at 256 KiB."""
    total = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items() if isinstance(v, str))
    if total > ANNOTATIONS_TOTAL_MAX:
        return [f"Too long: must have at most {ANNOTATIONS_TOTAL_MAX} bytes"]
    return []
