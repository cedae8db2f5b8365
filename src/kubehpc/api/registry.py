"""The registry of kinds kubehpc serves.

A kind is described once, as a :class:`ResourceType` with one :class:`VersionSpec` per served
version. Everything else — the store, the HTTP API and its discovery documents, the CLI's name
resolution, YAML loading — reads the registry, so adding a kind (Kueue, Volcano, KubeRay, MPI
Operator, …) is one module with a ``register(registry)`` function and no change to the plumbing.

Objects are plain JSON-like dicts throughout, exactly as the user wrote them plus server-set
fields: Kubernetes returns fields it does not act on unchanged, and so do we. Typed views
(pydantic models) are for validation and for the controllers that act on a kind.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubehpc.api.errors import BadRequest, Cause, NotFound

Obj = dict[str, Any]


class FieldValidation(enum.StrEnum):
    """The API server's ``fieldValidation`` query parameter (kubectl sends Strict)."""

    STRICT = "Strict"
    WARN = "Warn"
    IGNORE = "Ignore"


class PatchMeta(Protocol):
    """What strategic merge patch needs to know about one node of a kind's schema."""

    @property
    def strategy(self) -> str:
        """``x-kubernetes-patch-strategy``: "", "merge", "replace", "retainKeys" or a comma list."""
        ...

    @property
    def merge_key(self) -> str:
        """``x-kubernetes-patch-merge-key`` of a list, "" when none."""
        ...

    def child(self, key: str) -> PatchMeta | None:
        """Schema of a property (or of a map's values); None when unknown."""
        ...

    def item(self) -> PatchMeta | None:
        """Schema of a list's items; None when not a list."""
        ...


# What a status write may change (and all it reads from its caller): the rest of the object is
# the stored version's.
STATUS_WRITE_FIELDS = frozenset({"apiVersion", "kind", "metadata", "status"})


class Validate(Protocol):
    """Validates one object of one version. Returns warnings (unknown fields under
    fieldValidation=Warn, deprecated shorthands, ...) and raises errors.Invalid with one Cause
    per bad field, paths relative to the object root (``spec.template.spec.containers[0].image``).

    ``unchanged`` names top-level fields that are the stored version's own, shared as they were
    validated when stored (the spec in a status write). A validator may skip them: the API
    server's validation ratcheting drops errors in unchanged fields, and its status strategies
    validate the status alone."""

    def __call__(
        self, obj: Obj, mode: FieldValidation, /, *, unchanged: frozenset[str] = frozenset()
    ) -> list[str]: ...


# Fills in defaults in place, as the API server does on create and update.
Default = Callable[[Obj], None]
# Converts an object between a served version and the storage version (in place is allowed).
Convert = Callable[[Obj], Obj]
# Checks an update against the stored object: immutable fields and other transition rules.
ValidateUpdate = Callable[[Obj, Obj], list[Cause]]


@dataclass(frozen=True)
class PrinterColumn:
    """A column of ``kubectl get``'s table, as a CRD's additionalPrinterColumns declares it.

    ``json_path`` is a simple path (``.spec.parallelism``); ``value`` computes the cell instead
    for columns that are derived (READY 1/1, STATUS, AGE, ...).
    """

    name: str
    type: str = "string"
    json_path: str = ""
    value: Callable[[Obj], Any] | None = None
    priority: int = 0
    description: str = ""
    format: str = ""


@dataclass(frozen=True)
class VersionSpec:
    name: str
    validate: Validate
    default: Default | None = None
    patch_meta: PatchMeta | None = None
    """Schema for strategic merge patch; None means the kind accepts only JSON and merge
    patches, as the API server answers 415 for strategic merge on custom resources."""
    to_storage: Convert | None = None
    from_storage: Convert | None = None
    printer_columns: tuple[PrinterColumn, ...] = ()
    openapi_schema: Mapping[str, Any] | None = None
    """OpenAPI v3 schema of the whole object, for /openapi/v3 and generated CRDs."""


def _no_update_rules(old: Obj, new: Obj) -> list[Cause]:
    return []


@dataclass(frozen=True, eq=False)
class ResourceType:
    """One kind, served under one group in one or more versions, stored in one of them."""

    group: str
    kind: str
    plural: str
    namespaced: bool
    versions: tuple[VersionSpec, ...]
    storage_version: str
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status_subresource: bool = True
    validate_update: ValidateUpdate = _no_update_rules
    list_kind: str = ""
    write_mostly: bool = False
    """Objects written far more often than read back (Events: eight per queued Job, read by
    people): the store keeps them encoded only and decodes them on each read, rather than
    holding a decoded copy of every one in memory."""

    def __post_init__(self) -> None:
        if not self.singular:
            object.__setattr__(self, "singular", self.kind.lower())
        if not self.list_kind:
            object.__setattr__(self, "list_kind", self.kind + "List")
        if self.storage_version not in {v.name for v in self.versions}:
            raise ValueError(f"{self.kind}: storage version {self.storage_version} is not served")

    @property
    def key(self) -> str:
        """Stable identity used by the store: ``plural.group`` (``pods`` for the core group)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def api_version(self, version: str | None = None) -> str:
        v = version or self.storage_version
        return f"{self.group}/{v}" if self.group else v

    @property
    def preferred_version(self) -> str:
        return self.versions[0].name

    def version(self, name: str) -> VersionSpec:
        for v in self.versions:
            if v.name == name:
                return v
        served = ", ".join(v.name for v in self.versions)
        raise NotFound(
            f"{self.kind} is not served in version {name!r} (served: {served})",
            kind=self.kind,
            group=self.group,
        )

    def to_storage(self, obj: Obj) -> Obj:
        """Convert an object of any served version into the storage version."""
        version = obj.get("apiVersion", "").rpartition("/")[2]
        spec = self.version(version)
        if spec.name != self.storage_version and spec.to_storage is not None:
            obj = spec.to_storage(obj)
        obj["apiVersion"] = self.api_version(self.storage_version)
        return obj

    def from_storage(self, obj: Obj, version: str) -> Obj:
        """Convert a stored object to ``version`` (a copy when anything changes)."""
        if version == self.storage_version:
            return obj
        spec = self.version(version)
        out = dict(obj)
        if spec.from_storage is not None:
            out = spec.from_storage(out)
        out["apiVersion"] = self.api_version(version)
        return out


@dataclass
class Registry:
    """All kinds kubehpc serves, looked up by apiVersion+kind, by REST path or by CLI name."""

    _types: dict[str, ResourceType] = field(default_factory=dict)
    _by_gk: dict[tuple[str, str], ResourceType] = field(default_factory=dict)
    _by_gr: dict[tuple[str, str], ResourceType] = field(default_factory=dict)
    # kind -> apiVersion -> what for_kind answers: asked on every read and write. Keyed by one
    # string at each level, not by a pair: a tuple key is hashed afresh on every lookup.
    _by_avk: dict[str, dict[str, tuple[ResourceType, VersionSpec]]] = field(default_factory=dict)

    def register(self, rt: ResourceType) -> None:
        if rt.key in self._types:
            raise ValueError(f"{rt.key} is registered twice")
        self._types[rt.key] = rt
        self._by_gk[(rt.group, rt.kind)] = rt
        self._by_gr[(rt.group, rt.plural)] = rt
        for vs in rt.versions:
            self._by_avk.setdefault(rt.kind, {})[rt.api_version(vs.name)] = (rt, vs)

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(self._types.values())

    def __len__(self) -> int:
        return len(self._types)

    def get(self, key: str) -> ResourceType:
        return self._types[key]

    def for_kind(self, api_version: str, kind: str) -> tuple[ResourceType, VersionSpec]:
        """Resolve a manifest's apiVersion and kind; the error lists what is supported."""
        versions = self._by_avk.get(kind)
        if versions is not None:
            known = versions.get(api_version)
            if known is not None:
                return known
        group, _, version = api_version.rpartition("/")
        rt = self._by_gk.get((group, kind))
        if rt is None:
            raise BadRequest(
                f'no kind "{kind}" is registered for version "{api_version}"; supported: '
                + ", ".join(sorted(f"{t.api_version(v.name)} {t.kind}" for t in self for v in t.versions))
            )
        if version not in {v.name for v in rt.versions}:
            raise BadRequest(
                f'no kind "{kind}" is registered for version "{api_version}"; {kind} is served as '
                + ", ".join(rt.api_version(v.name) for v in rt.versions)
            )
        return rt, rt.version(version)

    def for_resource(self, group: str, version: str, plural: str) -> tuple[ResourceType, VersionSpec]:
        """Resolve a REST path's group, version and resource (404 when unknown)."""
        rt = self._by_gr.get((group, plural))
        if rt is None:
            gv = f"{group}/{version}" if group else version
            raise NotFound(f"the server could not find the requested resource ({plural} in {gv})")
        return rt, rt.version(version)

    def resolve(self, name: str) -> ResourceType:
        """Resolve a CLI resource name: plural, singular, short name or Kind, optionally
        qualified with a group (``jobs.batch``, ``workloads.kueue.x-k8s.io``). Core kinds win
        a tie, as kubectl prefers them; like kubectl, an exact plural, singular or Kind wins over
        a short name (``queue`` is Volcano's Queue, not Kueue's LocalQueue whose short name it is)."""
        lowered = name.lower()
        base, _, group = lowered.partition(".")
        in_group = [rt for rt in self if not group or rt.group == group or rt.group.startswith(group + ".")]
        matches = [rt for rt in in_group if base in (rt.plural, rt.singular, rt.kind.lower())]
        if not matches:
            matches = [rt for rt in in_group if base in rt.short_names]
        if not matches:
            raise NotFound(f'the server doesn\'t have a resource type "{name}"')
        matches.sort(key=lambda rt: (rt.group != "", rt.group))
        return matches[0]

    def groups(self) -> dict[str, list[str]]:
        """Served versions per group (preferred first), for discovery."""
        out: dict[str, list[str]] = {}
        for rt in self:
            versions = out.setdefault(rt.group, [])
            for v in rt.versions:
                if v.name not in versions:
                    versions.append(v.name)
        return out
