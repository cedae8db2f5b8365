"""Loading manifests: multi-document YAML and JSON from files, directories and stdin.

Document indexes (``doc N`` in messages) are 1-based and count the documents of one file as
the YAML parser sees them: a document starts at ``---`` (or at the top of the file), and a
comment block before the first ``---`` is not a document. Empty and comment-only documents
(``---`` followed by nothing, a trailing ``---``) are skipped but keep their number, so
``doc 3`` is always the third document of the stream. In a JSON file each top-level value is
one document. Items of a ``kind: List`` (or any ``*List``) share the list's index; their
errors name the item as ``items[2].spec...``.

Scalars are read as ``sigs.k8s.io/yaml`` (YAML 1.1, as kubectl) reads them: ``yes``/``no``/
``on``/``off``/``y``/``n`` are booleans, timestamps stay strings, and map keys become strings.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import yaml

from kubehpc.api.errors import ApiError, Cause
from kubehpc.api.meta import validate_metadata
from kubehpc.api.registry import FieldValidation, Registry

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "<stdin>"

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_BOOL = "tag:yaml.org,2002:bool"


class _KubeYAMLLoader(_BaseLoader):  # type: ignore[misc]
    """Safe YAML loading with ``sigs.k8s.io/yaml``'s scalar rules."""

    yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != _TIMESTAMP]
        for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
    }


_BOOLS = {
    "yes": True,
    "no": False,
    "true": True,
    "false": False,
    "on": True,
    "off": False,
    "y": True,
    "n": False,
}


def _construct_bool(loader: Any, node: Any) -> bool:
    return _BOOLS[loader.construct_scalar(node).lower()]


_KubeYAMLLoader.add_implicit_resolver(_BOOL, re.compile(r"^(?:y|Y|n|N)$"), list("yYnN"))
_KubeYAMLLoader.add_constructor(_BOOL, _construct_bool)


@dataclass(frozen=True)
class Document:
    source: str
    index: int
    obj: dict[str, Any]
    item: int | None = None
    """Position in the ``items`` of a List document, None for a plain document."""

    def path(self, field_path: str) -> str:
        """``field_path`` as seen from the document (prefixed with ``items[i].`` in a List)."""
        if self.item is None:
            return field_path
        prefix = f"items[{self.item}]"
        return f"{prefix}.{field_path}" if field_path else prefix


@dataclass(eq=False)
class ManifestError(Exception):
    """A problem with one document: ``job.yaml doc 2: spec.x: invalid quantity "8Gx"``."""

    source: str
    index: int
    field_path: str
    message: str
    causes: list[Cause] = field(default_factory=list)
    api_error: ApiError | None = None

    def prefix(self) -> str:
        return f"{self.source} doc {self.index}" if self.index else self.source

    def __str__(self) -> str:
        if len(self.causes) > 1:
            return "\n".join(
                f"{self.prefix()}: {c.field}: {c.message}" if c.field else f"{self.prefix()}: {c.message}"
                for c in self.causes
            )
        where = f"{self.field_path}: " if self.field_path else ""
        return f"{self.prefix()}: {where}{self.message}"


def _string_keys(value: Any) -> Any:
    """Map keys as ``sigs.k8s.io/yaml`` writes them into JSON: always strings."""
    if isinstance(value, dict):
        return {_key(k): _string_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_string_keys(v) for v in value]
    return value


def _key(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return key if isinstance(key, str) else str(key)


def _parse_yaml(text: str, source: str) -> Iterator[tuple[int, Any]]:
    index = 0
    try:
        for index, doc in enumerate(yaml.load_all(text, Loader=_KubeYAMLLoader), start=1):
            yield index, doc
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        problem = getattr(e, "problem", None) or str(e)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ManifestError(source, index + 1, "", f"invalid YAML{where}: {problem}") from e


def _parse_json(text: str, source: str) -> Iterator[tuple[int, Any]]:
    decoder = json.JSONDecoder()
    pos, index = 0, 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return
        index += 1
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise ManifestError(
                source, index, "", f"invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}"
            ) from e
        yield index, doc


def _parse(text: str, source: str) -> list[tuple[int, Any]]:
    """JSON for ``.json`` files; YAML otherwise, except that text starting with ``{`` is tried
    as JSON first (better error positions) and read as YAML (a flow mapping) if that fails."""
    if source.endswith(".json"):
        return list(_parse_json(text, source))
    if text.lstrip().startswith("{"):
        try:
            return list(_parse_json(text, source))
        except ManifestError:
            pass
    return list(_parse_yaml(text, source))


def parse_text(text: str, source: str) -> list[Document]:
    """Documents of one file's text (YAML, or JSON when it starts with ``{``)."""
    out: list[Document] = []
    for index, raw in _parse(text, source):
        if raw is None:
            continue  # empty or comment-only document: skipped, but its number is used up
        doc = _string_keys(raw)
        if not isinstance(doc, dict):
            what = "a list" if isinstance(doc, list) else f"a {type(doc).__name__}"
            raise ManifestError(source, index, "", f"expected an object with apiVersion and kind, got {what}")
        kind = doc.get("kind")
        if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
            for i, item in enumerate(doc["items"]):
                if not isinstance(item, dict):
                    raise ManifestError(
                        source, index, f"items[{i}]", "expected an object with apiVersion and kind"
                    )
                out.append(_checked(Document(source, index, item, i)))
        else:
            out.append(_checked(Document(source, index, doc)))
    return out


def _checked(doc: Document) -> Document:
    for key in ("apiVersion", "kind"):
        value = doc.obj.get(key)
        if not value:
            raise ManifestError(doc.source, doc.index, doc.path(key), f"Required value: {key} must be set")
        if not isinstance(value, str):
            raise ManifestError(doc.source, doc.index, doc.path(key), f"must be a string, got {value!r}")
    return doc


def _expand(path: Path, recursive: bool) -> list[Path]:
    if not path.is_dir():
        return [path]
    found = path.rglob("*") if recursive else path.iterdir()
    return sorted(p for p in found if p.is_file() and p.suffix in MANIFEST_SUFFIXES)


def load_documents(
    paths: Sequence[str | Path], recursive: bool = False, stdin: IO[str] | str | None = None
) -> list[Document]:
    """Every document of ``paths`` (files, directories, ``-`` for ``stdin``), in order."""
    out: list[Document] = []
    for given in paths:
        if str(given) == "-":
            if stdin is None:
                import sys

                stdin = sys.stdin
            text = stdin if isinstance(stdin, str) else stdin.read()
            out.extend(parse_text(text, STDIN))
            continue
        path = Path(given)
        if not path.exists():
            raise ManifestError(str(given), 0, "", "no such file or directory")
        for file in _expand(path, recursive):
            try:
                text = file.read_text(encoding="utf-8-sig")
            except (OSError, UnicodeDecodeError) as e:
                raise ManifestError(str(file), 0, "", f"cannot read: {e}") from e
            out.extend(parse_text(text, str(file)))
    return out


def check_document(
    doc: Document, registry: Registry, mode: FieldValidation = FieldValidation.STRICT
) -> list[str]:
    """Validate a document offline, as the API server would on create: kind lookup, metadata,
    the kind's schema and rules, and its defaults (applied to a copy). Returns warnings;
    raises :class:`ManifestError` naming file, document and field. The document itself is
    left as written (validation under Warn/Ignore prunes unknown fields, on a copy here)."""
    obj = copy.deepcopy(doc.obj)
    try:
        rt, version = registry.for_kind(obj["apiVersion"], obj["kind"])
        warnings = validate_metadata(obj, namespaced=rt.namespaced, mode=mode)
        warnings += version.validate(obj, mode)
        if version.default is not None:
            version.default(obj)
    except ApiError as e:
        causes = [Cause(doc.path(c.field), c.message, c.reason) for c in e.causes]
        if not causes:
            raise ManifestError(doc.source, doc.index, doc.path(""), e.message, api_error=e) from e
        first = causes[0]
        raise ManifestError(doc.source, doc.index, first.field, first.message, causes, e) from e
    return [f"{doc.source} doc {doc.index}: {w}" for w in warnings]
