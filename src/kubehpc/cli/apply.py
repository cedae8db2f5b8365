"""``kubehpc apply -f``: kubectl's client-side apply.

The file's object, minus nothing, is remembered in the ``kubectl.kubernetes.io/last-applied-
configuration`` annotation. A missing object is created; an existing one gets a three-way JSON
merge patch (original = last applied, modified = the file, current = live), so fields set by
others — status, defaults, controllers — survive, and fields removed from the file are removed.
The annotation is the same one kubectl writes, so kubectl and kubehpc can take turns.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import json
from typing import Any

from kubehpc.api.errors import ApiError, BadRequest, Cause, Invalid, NotFound, invalid
from kubehpc.api.loader import Document, ManifestError, load_documents
from kubehpc.api.shorthands import expand_shorthands
from kubehpc.cli import printers
from kubehpc.cli.session import CliError, Session
from kubehpc.kube.rest import ResourceInfo, RestClient
from kubehpc.store.client import PatchType, WriteOptions
from kubehpc.store.patch import three_way_merge_patch

LAST_APPLIED = printers.LAST_APPLIED
FORMATS = ("yaml", "json", "name")


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "apply",
        parents=[common],
        help="create or update resources from files (starts a control plane if none runs)",
    )
    p.add_argument("-f", "--filename", action="append", required=True, help="file, directory or - for stdin")
    p.add_argument("-R", "--recursive", action="store_true", help="walk directories given with -f")
    p.add_argument(
        "--dry-run",
        nargs="?",
        const="client",
        default="none",
        choices=("none", "client", "server"),
        help="client: only show what would be sent; server: let the server check it without storing",
    )
    p.add_argument("-o", "--output", default="", help="yaml|json|name")
    p.set_defaults(run=run)


def go_json(value: Any) -> str:
    """JSON exactly as Go's encoding/json writes it (keys sorted, <, >, & escaped), so the
    annotation matches kubectl's byte for byte and neither tool sees a change in the other's."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


def last_applied_json(obj: dict[str, Any]) -> str:
    """The annotation's value: the applied object with the annotation itself taken out, as
    kubectl writes it (an emptied annotations map stays, as ``{}``; a newline ends it)."""
    clean = copy.deepcopy(obj)
    meta = clean.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    annotations.pop(LAST_APPLIED, None)
    meta["annotations"] = annotations
    return go_json(clean) + "\n"


def with_last_applied(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    meta.setdefault("annotations", {})[LAST_APPLIED] = last_applied_json(obj)
    return out


def _original(current: dict[str, Any]) -> dict[str, Any] | None:
    text = ((current.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class _Applier:
    def __init__(self, session: Session, args: argparse.Namespace, client: RestClient) -> None:
        self.session, self.args, self.client = session, args, client
        self.dry_run = args.dry_run
        self.options = WriteOptions(
            dry_run=self.dry_run == "server", field_manager="kubectl-client-side-apply"
        )
        self.suffix = {"client": " (dry run)", "server": " (server dry run)"}.get(self.dry_run, "")

    def namespace_for(self, info: ResourceInfo, obj: dict[str, Any]) -> str | None:
        if not info.namespaced:
            return None
        meta = obj.setdefault("metadata", {})
        flag = getattr(self.args, "namespace", None)
        own = meta.get("namespace")
        if own and flag and own != flag:
            raise CliError(
                f'the namespace from the provided object "{own}" does not match the namespace "{flag}". '
                f"You must pass '--namespace={own}' to perform this operation."
            )
        ns = str(own or self.session.namespace())
        meta["namespace"] = ns
        return ns

    def resource_for(self, obj: dict[str, Any]) -> ResourceInfo:
        api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
        try:
            return self.client.resource_for(api_version, kind)
        except NotFound as err:
            # A mistyped kind is the usual cause: name the nearest served kinds first.
            served = self.client.resources()
            near = difflib.get_close_matches(kind.lower(), [i.kind.lower() for i in served], n=3, cutoff=0.75)
            guesses = [f"{i.kind} ({i.api_version})" for i in served if i.kind.lower() in near]
            if not guesses:
                raise
            choices = " or ".join(guesses)
            hint = f'no matches for kind "{kind}" in version "{api_version}"; did you mean {choices}?'
            raise NotFound(hint, kind=err.kind, group=err.group) from None

    def apply(self, obj: dict[str, Any]) -> tuple[str, dict[str, Any], ResourceInfo]:
        """Apply one object; returns what happened (created/configured/unchanged) and the result."""
        info = self.resource_for(obj)
        ns = self.namespace_for(info, obj)
        name = str(obj["metadata"].get("name", ""))
        if not name:
            # apply matches objects by name; a generated name would create a new one each time.
            how = "apply cannot use generateName (use create)" if obj["metadata"].get("generateName") else ""
            message = "Required value: name is required" + (f"; {how}" if how else "")
            raise invalid(info.kind, "", [Cause("metadata.name", message, "FieldValueRequired")])
        modified = with_last_applied(obj)
        try:
            current = self.client.get(info.api_version, info.kind, name, ns)
        except NotFound:
            if self.dry_run == "client":
                return "created", modified, info
            return "created", self.client.create(modified, self.options), info
        patch = three_way_merge_patch(_original(current), modified, current)
        if not patch:
            return "unchanged", current, info
        if self.dry_run == "client":
            return "configured", current, info
        result = self.client.patch(
            info.api_version, info.kind, name, patch, PatchType.MERGE, ns, options=self.options
        )
        # A patch that only restates what the server already holds (a list the server had
        # filled with defaults, say) changes nothing, and the server then keeps the version.
        before = (current.get("metadata") or {}).get("resourceVersion")
        after = (result.get("metadata") or {}).get("resourceVersion")
        return ("unchanged" if before == after else "configured"), result, info


def _report_failure(session: Session, doc: Document, err: ApiError) -> None:
    """One line per bad field, ``file doc N: path: message``; paths inside a List document
    start at its ``items[i]``."""
    where = f"{doc.source} doc {doc.index}"
    if isinstance(err, Invalid) and err.causes:
        for cause in err.causes:
            path = doc.path(cause.field)
            field = f"{path}: " if path else ""
            print(f"{where}: {field}{cause.message}", file=session.stderr)
    else:
        print(f"{where}: Error from server ({err.reason}): {err.message}", file=session.stderr)


def _all_valid(session: Session, args: argparse.Namespace, client: RestClient, docs: list[Document]) -> bool:
    """Checks every document with a server dry run before any is stored, so a file with one
    mistyped field or bad quantity is refused whole instead of leaving its other objects
    behind. Only field errors (Invalid, BadRequest) refuse the file: a missing namespace or
    kind may be made by an earlier document of the same file, and is reported when applied."""
    checker = _Applier(session, argparse.Namespace(**{**vars(args), "dry_run": "server"}), client)
    refused = 0
    for doc in docs:
        try:
            checker.apply(copy.deepcopy(doc.obj))
        except (Invalid, BadRequest) as err:
            _report_failure(session, doc, err)
            refused += 1
        except ApiError:
            continue
    if refused:
        print(
            f"error: {refused} of {len(docs)} document(s) invalid; nothing was applied", file=session.stderr
        )
    return not refused


def run(session: Session, args: argparse.Namespace) -> int:
    printers.check_output_format(args.output, FORMATS)
    try:
        documents = load_documents(args.filename, recursive=args.recursive, stdin=session.stdin)
    except ManifestError as exc:
        raise CliError(str(exc)) from None
    docs = list(documents)
    if not docs:
        raise CliError("no objects passed to apply")
    for warning in expand_shorthands(docs):
        print(f"Warning: {warning}", file=session.stderr)
    client = session.client(start_if_needed=True)
    applier = _Applier(session, args, client)
    if args.dry_run == "none" and len(docs) > 1 and not _all_valid(session, args, client, docs):
        return 1
    failed = 0
    results: list[tuple[ResourceInfo, dict[str, Any]]] = []
    for doc in docs:
        try:
            outcome, result, info = applier.apply(copy.deepcopy(doc.obj))
        except ApiError as err:
            _report_failure(session, doc, err)
            failed += 1
            continue
        if args.output in ("", "name"):
            tail = f" {outcome}{applier.suffix}" if not args.output else ""
            print(f"{printers.object_name(info, result)}{tail}", file=session.stdout, flush=True)
        else:
            results.append((info, result))
    if results:
        objs = [obj for _, obj in results]
        printers.print_objects(session.stdout, args.output, results[0][0], objs, single=len(objs) == 1)
    return 1 if failed else 0
