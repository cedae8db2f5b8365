"""The write verbs of the embedded store: create, update, update_status, patch, delete.

Each follows the API server's order: resolve the kind, set server fields, validate, default,
convert to the storage version, check against the stored object, then commit (via the
store's ``_apply``). Every write holds the store lock from the read of the current object to
the commit, so a check never races a concurrent writer.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import orjson

from kubehpc.api import fields as F
from kubehpc.api.errors import (
    AlreadyExists,
    BadRequest,
    Cause,
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    UnsupportedMediaType,
    invalid,
    strict_decoding_error,
)
from kubehpc.api.meta import validate_metadata
from kubehpc.api.registry import STATUS_WRITE_FIELDS, FieldValidation, ResourceType, VersionSpec
from kubehpc.store import strategy as st
from kubehpc.store.admission import AdmissionHook
from kubehpc.store.client import DeleteOptions, PatchType, WriteOptions, WriteResult
from kubehpc.store.patch import apply_json_patch, apply_merge_patch, apply_strategic_merge_patch
from kubehpc.store.records import ADDED, DELETED, MODIFIED, Change, Obj, Record, encode

if TYPE_CHECKING:
    from kubehpc.api.registry import Registry


_MODES = {mode.value: mode for mode in FieldValidation}


def _mode(options: WriteOptions) -> FieldValidation:
    # A dict lookup: calling the enum costs a microsecond, on every write.
    mode = _MODES.get(options.field_validation or "Strict")
    if mode is not None:
        return mode
    try:
        return FieldValidation(options.field_validation)
    except ValueError:
        raise BadRequest(
            f'fieldValidation: Unsupported value: "{options.field_validation}": supported values: '
            '"Ignore", "Strict", "Warn"'
        ) from None


def _copy(obj: Any, what: str) -> Obj:
    if not isinstance(obj, dict):
        raise BadRequest(f"{what}: the object must be a JSON object, not {type(obj).__name__}")
    try:
        out: Obj = orjson.loads(orjson.dumps(obj))
    except TypeError as exc:
        raise BadRequest(f"{what}: not JSON-serialisable: {exc}") from None
    return out


def _own(obj: Any, what: str, options: WriteOptions) -> Obj:
    """The object a write may change and keep: the caller's own when handed over
    (``WriteOptions.handed_over``), else a copy."""
    if options.handed_over and type(obj) is dict:
        return obj
    return _copy(obj, what)


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise invalid(
            str(obj.get("kind", "")), "", [Cause("metadata", "must be an object", "FieldValueTypeInvalid")]
        )
    return meta


def _check_no_new_finalizers(rt: ResourceType, name: str, old_meta: Obj, meta: Obj) -> None:
    if not old_meta.get("deletionTimestamp"):
        return
    added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
    if added:
        message = (
            "Forbidden: no new finalizers can be added if the object is being deleted, "
            f"found new finalizers {sorted(added)}"
        )
        raise invalid(
            rt.kind, name, [Cause("metadata.finalizers", message, "FieldValueForbidden")], group=rt.group
        )


class WritesMixin:
    """Write verbs; mixed into :class:`kubehpc.store.store.Store`, which owns the state."""

    registry: Registry
    admission: Sequence[AdmissionHook]
    _lock: threading.RLock
    _rng: random.Random
    _rv: int

    # Provided by the Store. Declared as methods, not under TYPE_CHECKING: mypyc compiles
    # this mixin to a native class, whose method table must name them.
    def _next_rv(self) -> int:
        raise NotImplementedError

    def _apply(self, change: Change) -> None:
        raise NotImplementedError

    def _record(self, rt: ResourceType, namespace: str, name: str) -> Record | None:
        raise NotImplementedError

    def _not_found(self, rt: ResourceType, name: str) -> NotFound:
        raise NotImplementedError

    def _decode(self, rt: ResourceType, version: str, raw: bytes) -> Obj:
        raise NotImplementedError

    def _commit_later(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    # --- helpers -------------------------------------------------------------------------

    def _resolve(self, obj: Obj) -> tuple[ResourceType, VersionSpec]:
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not api_version or not isinstance(kind, str) or not kind:
            raise BadRequest("Object 'Kind' and 'apiVersion' are missing or empty; both are required")
        return self.registry.for_kind(api_version, kind)

    def _validate(self, rt: ResourceType, vs: VersionSpec, obj: Obj, mode: FieldValidation) -> list[str]:
        # The name rule of the kind (DNS label for Namespaces, ...) is the one its module
        # registered with api.meta.set_name_rule.
        try:
            warnings = validate_metadata(obj, namespaced=rt.namespaced, mode=mode)
            warnings += vs.validate(obj, mode)
        except Invalid as err:
            raise strict_decoding_error(rt.kind, vs.name, err) from None
        return warnings

    def _commit(self, rt: ResourceType, type_: str, obj: Obj, prev: Record | None) -> Record:
        """Stamp a new resourceVersion on ``obj`` (storage version) and commit it."""
        rv = self._next_rv()
        meta = obj["metadata"]
        meta["resourceVersion"] = str(rv)
        try:
            rec = Record(encode(obj), None, rv) if rt.write_mostly else Record.of(obj, rv)
        except TypeError as exc:  # a handed-over object (never copied) holding a non-JSON value
            self._rv -= 1  # nothing was written at it
            raise BadRequest(f"{rt.kind} {meta['name']!r}: not JSON-serialisable: {exc}") from None
        self._apply(Change(rv, type_, rt.key, meta.get("namespace", ""), meta["name"], rec, prev))
        return rec

    def _check_namespace(self, rt: ResourceType, namespace: str, name: str) -> None:
        ns_rt = self.registry.for_kind("v1", "Namespace")[0]
        rec = self._record(ns_rt, "", namespace)
        if rec is None:
            raise NotFound(f'namespaces "{namespace}" not found', name=namespace, kind="namespaces")
        if st.namespace_terminating(rec.obj):
            raise Forbidden(
                f'{rt.key} "{name}" is forbidden: unable to create new content in namespace {namespace} '
                "because it is being terminated",
                name=name,
                kind=rt.plural,
                group=rt.group,
            )

    def _out(self, rt: ResourceType, vs: VersionSpec, obj: Obj) -> Obj:
        """An independent copy of a storage-version object in the caller's version."""
        return self._decode(rt, vs.name, orjson.dumps(obj))

    def _result(
        self,
        rt: ResourceType,
        vs: VersionSpec,
        rec: Record,
        options: WriteOptions,
        written: Obj | None = None,
    ) -> Obj:
        """What a write returns: the stored version in the caller's API version. A read-only
        caller (``WriteOptions.read_only``) gets the record's decoded object, shared with the
        store's readers, instead of a decode of its own. A write-mostly kind's record keeps no
        decoded object; ``written``, the object it was encoded from, is then nobody else's."""
        if options.read_only and vs.name == rt.storage_version:
            shared = rec.decoded if rec.decoded is not None else written
            if shared is not None:
                return shared
        return self._decode(rt, vs.name, rec.raw)

    # --- create --------------------------------------------------------------------------

    def create(self, obj: Obj, options: WriteOptions | None = None) -> Obj:
        return self.create_result(obj, options).object

    def create_result(self, obj: Obj, options: WriteOptions | None = None) -> WriteResult:
        """``create`` plus the validation warnings (``Warning:`` headers over HTTP)."""
        options = options or WriteOptions()
        if options.best_effort:
            with self._commit_later():
                return self._create(obj, options)
        return self._create(obj, options)

    def _create(self, obj: Obj, options: WriteOptions) -> WriteResult:
        obj = _own(obj, "create", options)
        if obj.get("kind") == "Binding" and obj.get("apiVersion") == "v1":
            return WriteResult(self._bind(obj, options))
        rt, vs = self._resolve(obj)
        mode = _mode(options)
        meta = _meta(obj)
        if rt.namespaced:
            meta["namespace"] = meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        for server_field in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
            meta.pop(server_field, None)
        with self._lock:
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = self._free_name(rt, meta.get("namespace", ""), str(meta["generateName"]))
            name = str(meta.get("name") or "")
            if rt.namespaced and name:
                self._check_namespace(rt, meta["namespace"], name)
            meta["uid"] = st.new_uid()
            meta["creationTimestamp"] = st.now_rfc3339()
            meta["generation"] = 1
            if st.clears_status_on_create(rt):
                obj.pop("status", None)
            warnings: list[str] = []
            if not (options.valid_by_construction and rt.kind == "Event" and rt.group == ""):
                warnings = self._validate(rt, vs, obj, mode)
            if vs.default is not None:
                vs.default(obj)
            for hook in self.admission:
                hook("CREATE", rt, obj, None)
            if st.is_namespace(rt):
                st.prepare_namespace_create(obj)
            stored = rt.to_storage(obj)
            namespace = stored["metadata"].get("namespace", "")
            if self._record(rt, namespace, name) is not None:
                raise AlreadyExists(
                    f'{rt.key} "{name}" already exists', name=name, kind=rt.plural, group=rt.group
                )
            if options.dry_run:
                return WriteResult(self._out(rt, vs, stored), warnings)
            rec = self._commit(rt, ADDED, stored, None)
            return WriteResult(self._result(rt, vs, rec, options, stored), warnings)

    def _bind(self, binding: Obj, options: WriteOptions) -> Obj:
        """``pods/binding``: assign a pending pod to a node, the one way ``spec.nodeName`` is
        set after creation (pod updates may not change it). As the API server: the pod must
        exist, not be bound or being deleted; binding annotations are copied onto the pod and
        the PodScheduled condition is set."""
        meta = _meta(binding)
        name = str(meta.get("name") or "")
        namespace = str(meta.get("namespace") or "default")
        target = F.obj_field(binding, "target")
        node = str(target.get("name") or "") if isinstance(target, dict) else ""
        if not name or not node or (target.get("kind") or "Node") != "Node":
            causes = [Cause("target.name", "Required value: a Node to bind to", "FieldValueRequired")]
            if not name:
                causes = [Cause("metadata.name", "Required value: the pod to bind", "FieldValueRequired")]
            raise invalid("Binding", name, causes)
        rt = self.registry.for_kind("v1", "Pod")[0]
        with self._lock:
            rec = self._record(rt, namespace, name)
            if rec is None:
                raise self._not_found(rt, name)
            # The new version shares what binding leaves alone (containers, volumes, ...) with
            # the stored one, read only as both are; only the parts it changes are copied.
            old = rec.obj
            pod = dict(old)
            pmeta = pod["metadata"] = dict(old["metadata"])
            if meta.get("uid") and meta["uid"] != pmeta.get("uid"):
                raise Conflict(
                    f'Operation cannot be fulfilled on pods/binding "{name}": Precondition failed: '
                    f"UID in precondition: {meta['uid']}, UID in object meta: {pmeta.get('uid')}",
                    name=name,
                    kind="pods",
                )
            if pmeta.get("deletionTimestamp"):
                raise Conflict(
                    f"pod {name} is being deleted, cannot be assigned to a host", name=name, kind="pods"
                )
            bound = F.spec(pod).get("nodeName")
            if bound:
                raise Conflict(f'pod {name} is already assigned to node "{bound}"', name=name, kind="pods")
            pod["spec"] = {**F.spec(old), "nodeName": node}
            if meta.get("annotations"):
                pmeta["annotations"] = {**F.obj_field(pmeta, "annotations"), **meta["annotations"]}
            status = pod["status"] = dict(F.status(old))
            conditions = [c for c in F.object_list(status, "conditions") if c.get("type") != "PodScheduled"]
            conditions.append(
                {
                    "type": "PodScheduled",
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": st.now_rfc3339(),
                }
            )
            status["conditions"] = conditions
            if not options.dry_run:
                self._commit(rt, MODIFIED, pod, rec)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def _free_name(self, rt: ResourceType, namespace: str, prefix: str) -> str:
        for _ in range(16):
            name = st.generated_name(prefix, self._rng)
            if self._record(rt, namespace, name) is None:
                return name
        raise AlreadyExists(f'{rt.key} "{prefix}": no free generated name', kind=rt.plural, group=rt.group)

    # --- update --------------------------------------------------------------------------

    def update(self, obj: Obj, options: WriteOptions | None = None) -> Obj:
        return self.update_result(obj, options).object

    def _current(self, rt: ResourceType, obj: Obj) -> tuple[Record, str, str]:
        meta = _meta(obj)
        name = str(meta.get("name") or "")
        if not name:
            raise invalid(
                rt.kind,
                "",
                [Cause("metadata.name", "Required value: name is required", "FieldValueRequired")],
            )
        namespace = (meta.get("namespace") or "default") if rt.namespaced else ""
        rec = self._record(rt, namespace, name)
        if rec is None:
            raise self._not_found(rt, name)
        return rec, namespace, name

    def _check_rv(self, rt: ResourceType, obj: Obj, rec: Record, name: str) -> None:
        want = str(F.metadata(obj).get("resourceVersion") or "")
        if want and want != str(rec.meta.get("resourceVersion")):
            raise Conflict(
                f'Operation cannot be fulfilled on {rt.key} "{name}": the object has been modified; '
                "please apply your changes to the latest version and try again",
                name=name,
                kind=rt.plural,
                group=rt.group,
            )

    def update_result(self, obj: Obj, options: WriteOptions | None = None) -> WriteResult:
        options = options or WriteOptions()
        obj = _own(obj, "update", options)
        rt, vs = self._resolve(obj)
        mode = _mode(options)
        with self._lock:
            rec, namespace, name = self._current(rt, obj)
            self._check_rv(rt, obj, rec, name)
            old = rec.obj
            old_meta = old["metadata"]
            meta = obj["metadata"]
            if rt.namespaced:
                meta["namespace"] = namespace
            else:
                meta.pop("namespace", None)
            for keep in (
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ):
                if keep in old_meta:
                    meta[keep] = old_meta[keep]
                else:
                    meta.pop(keep, None)
            _check_no_new_finalizers(rt, name, old_meta, meta)
            if rt.status_subresource:
                # Status is kept as stored (a copy: defaulters may write into it).
                if vs.name == rt.storage_version:
                    status = old.get("status")
                    status = None if status is None else orjson.loads(orjson.dumps(status))
                else:
                    status = rt.from_storage(rec.copy(), vs.name).get("status")
                if status is None:
                    obj.pop("status", None)
                else:
                    obj["status"] = status
            warnings = self._validate(rt, vs, obj, mode)
            if vs.default is not None:
                vs.default(obj)
            for hook in self.admission:
                hook("UPDATE", rt, obj, old)
            if st.is_namespace(rt):
                # spec.finalizers belongs to the finalize subresource.
                obj.setdefault("spec", {})["finalizers"] = F.spec(old).get("finalizers", [])
            new = rt.to_storage(obj)
            causes = rt.validate_update(old, new)
            if causes:
                raise invalid(rt.kind, name, causes, group=rt.group)
            return self._store_update(rt, vs, rec, new, options, warnings)

    def _store_update(
        self,
        rt: ResourceType,
        vs: VersionSpec,
        rec: Record,
        new: Obj,
        options: WriteOptions,
        warnings: list[str],
    ) -> WriteResult:
        old = rec.obj
        meta = new["metadata"]
        meta["generation"] = int(old["metadata"].get("generation") or 1)
        if st.spec_part(new) != st.spec_part(old):
            meta["generation"] += 1
        meta["resourceVersion"] = old["metadata"].get("resourceVersion")
        if new == old:  # a no-op keeps its resourceVersion and sends no event
            return WriteResult(self._result(rt, vs, rec, options), warnings)
        if options.dry_run:
            return WriteResult(self._out(rt, vs, new), warnings)
        if st.should_delete_on_update(new):
            out = self._commit(rt, DELETED, new, rec)
        else:
            out = self._commit(rt, MODIFIED, new, rec)
        return WriteResult(self._result(rt, vs, out, options), warnings)

    def update_status(self, obj: Obj, options: WriteOptions | None = None) -> Obj:
        return self.update_status_result(obj, options).object

    def update_status_result(self, obj: Obj, options: WriteOptions | None = None) -> WriteResult:
        options = options or WriteOptions()
        if not isinstance(obj, dict):
            raise BadRequest(f"update_status: the object must be a JSON object, not {type(obj).__name__}")
        # A status write changes the status alone: only it (and the name, namespace and
        # resourceVersion in metadata) is read from the caller, so only it is copied, and
        # only the status need be the caller's own to hand over.
        fields = {k: v for k, v in obj.items() if k in STATUS_WRITE_FIELDS}
        obj = fields if options.handed_over else _copy(fields, "update_status")
        rt, vs = self._resolve(obj)
        if not rt.status_subresource:
            raise NotFound(f"the server could not find the requested resource ({rt.key}/status)")
        mode = _mode(options)
        with self._lock:
            rec, _, name = self._current(rt, obj)
            self._check_rv(rt, obj, rec, name)
            if vs.name == rt.storage_version and mode == FieldValidation.STRICT:
                # Everything but the status and the metadata the commit stamps is the stored
                # version's, shared read-only: Strict validation never prunes, and the new
                # Record serialises what it is given.
                merged = dict(rec.obj)
                merged["metadata"] = dict(merged["metadata"])
                # Validated when stored; validators may skip it (see registry.Validate).
                unchanged = frozenset(k for k in merged if k not in STATUS_WRITE_FIELDS)
            else:
                merged = rt.from_storage(rec.copy(), vs.name)
                unchanged = frozenset()
            if "status" in obj:
                merged["status"] = obj["status"]
            else:
                merged.pop("status", None)
            try:
                warnings = vs.validate(merged, mode, unchanged=unchanged)
            except Invalid as err:
                raise strict_decoding_error(rt.kind, vs.name, err) from None
            new = rt.to_storage(merged)
            new["metadata"]["generation"] = rec.obj["metadata"].get("generation", 1)
            if new == rec.obj:
                return WriteResult(self._result(rt, vs, rec, options), warnings)
            if options.dry_run:
                return WriteResult(self._out(rt, vs, new), warnings)
            out = self._commit(rt, MODIFIED, new, rec)
            return WriteResult(self._result(rt, vs, out, options), warnings)

    # --- patch ---------------------------------------------------------------------------

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        patch_type: PatchType = PatchType.MERGE,
        namespace: str | None = None,
        subresource: str = "",
        options: WriteOptions | None = None,
    ) -> Obj:
        return self.patch_result(
            api_version, kind, name, patch, patch_type, namespace, subresource, options
        ).object

    def patch_result(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        patch_type: PatchType = PatchType.MERGE,
        namespace: str | None = None,
        subresource: str = "",
        options: WriteOptions | None = None,
    ) -> WriteResult:
        if options is not None and options.best_effort:
            with self._commit_later():
                return self._patch(
                    api_version, kind, name, patch, patch_type, namespace, subresource, options
                )
        return self._patch(api_version, kind, name, patch, patch_type, namespace, subresource, options)

    def _patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        patch_type: PatchType,
        namespace: str | None,
        subresource: str,
        options: WriteOptions | None,
    ) -> WriteResult:
        rt, vs = self.registry.for_kind(api_version, kind)
        if isinstance(patch, bytes | str):
            try:
                patch = orjson.loads(patch)
            except orjson.JSONDecodeError as exc:
                raise BadRequest(f"error decoding patch: {exc}") from None
        patch_type = PatchType(patch_type)
        if patch_type == PatchType.APPLY:
            raise UnsupportedMediaType("server-side apply is not supported; use client-side apply")
        if patch_type == PatchType.STRATEGIC and vs.patch_meta is None:
            raise UnsupportedMediaType(
                f"the body of the request was in an unknown format - accepted media types include: "
                f"{PatchType.JSON}, {PatchType.MERGE}, {PatchType.APPLY}",
                kind=rt.plural,
                group=rt.group,
            )
        if subresource not in ("", "status", "finalize"):
            raise NotFound(f"the server could not find the requested resource ({rt.key}/{subresource})")
        ns = (namespace or "default") if rt.namespaced else ""
        with self._lock:
            rec = self._record(rt, ns, name)
            if rec is None:
                raise self._not_found(rt, name)
            current = rt.from_storage(rec.copy(), vs.name)
            if patch_type == PatchType.JSON:
                patched = apply_json_patch(current, patch)
            elif patch_type == PatchType.MERGE:
                patched = apply_merge_patch(current, patch)
            else:
                assert vs.patch_meta is not None
                patched = apply_strategic_merge_patch(current, patch, vs.patch_meta)
            if not isinstance(patched, dict):
                raise BadRequest("the patch must leave an object")
            patched["apiVersion"] = rt.api_version(vs.name)
            patched["kind"] = rt.kind
            pmeta = _meta(patched)
            pmeta["name"] = name
            if rt.namespaced:
                pmeta["namespace"] = ns
            if subresource == "status":
                return self.update_status_result(patched, options)
            if subresource == "finalize":
                return self._finalize(rt, vs, rec, patched, options or WriteOptions())
            return self.update_result(patched, options)

    def _finalize(
        self, rt: ResourceType, vs: VersionSpec, rec: Record, patched: Obj, options: WriteOptions
    ) -> WriteResult:
        """namespaces/finalize: only ``spec.finalizers`` changes (the namespace controller's
        last step); the namespace goes once nothing holds it."""
        if not st.is_namespace(rt):
            raise NotFound(f"the server could not find the requested resource ({rt.key}/finalize)")
        new = rec.copy()
        new.setdefault("spec", {})["finalizers"] = list(F.spec(patched).get("finalizers") or [])
        return self._store_update(rt, vs, rec, new, options, [])

    # --- delete --------------------------------------------------------------------------

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        options: DeleteOptions | None = None,
    ) -> Obj:
        options = options or DeleteOptions()
        rt, vs = self.registry.for_kind(api_version, kind)
        ns = (namespace or "default") if rt.namespaced else ""
        with self._lock:
            rec = self._record(rt, ns, name)
            if rec is None:
                raise self._not_found(rt, name)
            st.check_delete_preconditions(rt, rec.obj, options)
            obj = rec.copy()
            meta = obj["metadata"]
            finalizers: list[str] = list(meta.get("finalizers") or [])
            if meta.get("deletionTimestamp"):
                return self._delete_again(rt, vs, rec, obj, options)
            if options.propagation_policy is not None:
                # The policy of this delete replaces one a previous request asked for.
                policy_finalizers = (st.ORPHAN_FINALIZER, st.FOREGROUND_FINALIZER)
                finalizers = [f for f in finalizers if f not in policy_finalizers]
                extra = st.propagation_finalizer(options.propagation_policy)
                if extra:
                    finalizers.append(extra)
            grace = st.pod_grace_seconds(obj, options) if st.is_pod(rt) else 0
            now = time.time()
            if st.is_namespace(rt):
                obj.setdefault("status", {})["phase"] = "Terminating"
            keep = finalizers or grace > 0 or (st.is_namespace(rt) and F.spec(obj).get("finalizers"))
            if keep:
                if finalizers:
                    meta["finalizers"] = finalizers
                meta["deletionTimestamp"] = st.rfc3339(now + grace)
                meta["deletionGracePeriodSeconds"] = grace
                meta["generation"] = int(meta.get("generation") or 1) + 1
                type_ = MODIFIED
            else:
                type_ = DELETED
            if options.dry_run:
                return self._out(rt, vs, obj)
            out = self._commit(rt, type_, obj, rec)
            return self._decode(rt, vs.name, out.raw)

    def _delete_again(
        self, rt: ResourceType, vs: VersionSpec, rec: Record, obj: Obj, options: DeleteOptions
    ) -> Obj:
        """A delete of an object already being deleted: grace 0 ends a graceful deletion."""
        meta = obj["metadata"]
        if options.grace_period_seconds != 0 or int(meta.get("deletionGracePeriodSeconds") or 0) == 0:
            return self._decode(rt, vs.name, rec.raw)
        meta["deletionGracePeriodSeconds"] = 0
        meta["deletionTimestamp"] = st.now_rfc3339()
        type_ = DELETED if st.should_delete_on_update(obj) else MODIFIED
        if options.dry_run:
            return self._out(rt, vs, obj)
        out = self._commit(rt, type_, obj, rec)
        return self._decode(rt, vs.name, out.raw)

    def _ensure_initial_namespaces(self) -> None:
        with self._lock:
            for name in st.INITIAL_NAMESPACES:
                ns_rt = self.registry.for_kind("v1", "Namespace")[0]
                if self._record(ns_rt, "", name) is None:
                    self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
