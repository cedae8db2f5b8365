"""``metadata`` validation shared by every kind, built-in and custom.

The store calls :func:`validate_metadata` before a kind's own validator, so kind validators
skip ``metadata``. Rules and messages follow the API server's ``ValidateObjectMeta``. A
cluster-scoped object may carry a namespace: the API server clears it rather than failing, and
so does the store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from kubehpc.api import names
from kubehpc.api.errors import Cause, invalid
from kubehpc.api.registry import FieldValidation
from kubehpc.api.schema import OBJECT_META, Collector, show_value, validate_definition

NameRule = Literal["subdomain", "label", "dns1035"]
_NAME_RULES: dict[str, Callable[[str], list[str]]] = {
    "subdomain": names.dns1123_subdomain,
    "label": names.dns1123_label,
    "dns1035": names.dns1035_label,
}


def metadata_causes(
    meta: Any, *, mode: FieldValidation, name_rule: NameRule = "subdomain", path: str = "metadata"
) -> tuple[list[Cause], list[str]]:
    """Problems with one ``metadata`` object (also used for embedded templates' metadata)."""
    out = Collector(mode)
    if meta is None:
        meta = {}
    validate_definition(OBJECT_META, meta, path, mode, out)
    if not isinstance(meta, dict):
        return out.causes, out.warnings
    check_name = _NAME_RULES[name_rule]
    name, generate_name = meta.get("name"), meta.get("generateName")
    if not name and not generate_name:
        out.causes.append(
            Cause(f"{path}.name", "Required value: name or generateName is required", "FieldValueRequired")
        )
    if isinstance(name, str) and name:
        out.causes.extend(_invalid(f"{path}.name", name, e) for e in check_name(name))
    if isinstance(generate_name, str) and generate_name and not name:
        # the server appends 5 random characters, so a trailing '-' is fine
        prefix = generate_name[:-1] if generate_name.endswith("-") else generate_name
        out.causes.extend(
            Cause(f"{path}.generateName", f"Invalid value: {show_value(generate_name)}: {e}")
            for e in check_name(prefix or "x")
        )
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and namespace:
        out.causes.extend(
            Cause(f"{path}.namespace", f"Invalid value: {show_value(namespace)}: {e}")
            for e in names.dns1123_label_remembered(namespace)
        )
    # Each is handed the metadata's path: the field's own is built only for a report.
    out.causes.extend(_owner_causes(meta.get("ownerReferences"), path))
    out.causes.extend(_label_causes(meta.get("labels"), path))
    out.causes.extend(_annotation_causes(meta.get("annotations"), path))
    return out.causes, out.warnings


def _invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause(path, f"Invalid value: {show_value(value)}: {detail}")


def _owner_causes(owners: Any, meta_path: str) -> list[Cause]:
    if not isinstance(owners, list):
        return []
    controllers = [o for o in owners if isinstance(o, dict) and o.get("controller") is True]
    if len(controllers) < 2:
        return []
    found = ", ".join(f"{o.get('kind')}/{o.get('name')}" for o in controllers)
    return [
        Cause(
            f"{meta_path}.ownerReferences",
            "Invalid value: "
            + show_value(owners)
            + f': Only one reference can have Controller set to true. Found "true" in references for {found}',
        )
    ]


def _label_causes(labels: Any, meta_path: str) -> list[Cause]:
    if not isinstance(labels, dict):
        return []
    causes: list[Cause] = []
    for key, value in labels.items():
        causes.extend(
            Cause(f"{meta_path}.labels", f"Invalid value: {show_value(key)}: {e}")
            for e in names.qualified_name_remembered(key)
        )
        if isinstance(value, str):
            causes.extend(
                _invalid(f"{meta_path}.labels", value, e) for e in names.label_value_remembered(value)
            )
    return causes


def _annotation_causes(annotations: Any, meta_path: str) -> list[Cause]:
    if not isinstance(annotations, dict):
        return []
    path = f"{meta_path}.annotations"  # annotations are rare on the hot path
    causes: list[Cause] = []
    for key in annotations:
        causes.extend(
            Cause(path, f"Invalid value: {show_value(key)}: {e}")
            for e in names.qualified_name_remembered(key.lower())
        )
    causes.extend(Cause(path, e, "FieldValueTooLong") for e in names.annotations_size(annotations))
    return causes


# Kinds whose names must be a DNS label rather than a subdomain, keyed by (group, kind);
# kind modules add theirs with :func:`set_name_rule`.
_KIND_NAME_RULES: dict[tuple[str, str], NameRule] = {}


def set_name_rule(group: str, kind: str, rule: NameRule) -> None:
    _KIND_NAME_RULES[(group, kind)] = rule


def name_rule_for(group: str, kind: str) -> NameRule:
    return _KIND_NAME_RULES.get((group, kind), "subdomain")


def validate_metadata(
    obj: dict[str, Any],
    *,
    namespaced: bool,
    mode: FieldValidation,
    name_rule: NameRule | None = None,
) -> list[str]:
    """Check ``obj["metadata"]``; return warnings, raise ``errors.Invalid`` on any problem.

    ``name_rule`` defaults to the rule registered for the object's kind (``set_name_rule``),
    else a DNS-1123 subdomain.
    """
    meta = obj.get("metadata")
    if name_rule is None:
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        name_rule = name_rule_for(group, str(obj.get("kind", "")))
    causes, warnings = metadata_causes(meta, mode=mode, name_rule=name_rule)
    if causes:
        name = ""
        if isinstance(meta, dict):
            name = str(meta.get("name") or meta.get("generateName") or "")
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        raise invalid(str(obj.get("kind", "")), name, causes, group=group)
    return warnings
