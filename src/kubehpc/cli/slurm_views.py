"""``kubehpc squeue | sinfo | sacct | scontrol | scancel``: Slurm's commands over the cluster's
Job, Pod and Node objects. The formatting lives in :mod:`kubehpc.slurm` (pure); this module
fetches, filters and prints. Jobs are those ``kubehpc sbatch`` made (label
``slurm.kubehpc.io/job-id``), in every namespace unless ``--namespace`` names one."""

from __future__ import annotations

import argparse
import getpass
import json
import time
from datetime import UTC, datetime
from typing import Any

from kubehpc.api.errors import ApiError
from kubehpc.cli.session import CliError, Session
from kubehpc.cli.slurm_common import add_connection_flags, mapping_for
from kubehpc.slurm import hostlist
from kubehpc.slurm import translate as T
from kubehpc.slurm.columns import FormatError
from kubehpc.slurm.jobs import ANN_CANCELLED_TASKS, SlurmJob, collect, pod_index
from kubehpc.slurm.nodes import (
    SINFO_DEFAULT,
    SINFO_LONG,
    SINFO_NODES,
    SINFO_NODES_LONG,
    node_records,
    partition_names,
    scontrol_node,
    scontrol_partition,
    sinfo_text,
)
from kubehpc.slurm.select import (
    ACTIVE,
    Filter,
    JobRef,
    SelectError,
    cancel_patch,
    parse_job_ids,
    parse_states,
    split_list,
)
from kubehpc.slurm.views import (
    SACCT_DEFAULT,
    SACCT_LONG,
    SQUEUE_DEFAULT,
    SQUEUE_LONG,
    SQUEUE_START,
    estimated_starts_of,
    sacct_json,
    sacct_text,
    scontrol_job,
    squeue_json,
    squeue_order,
    squeue_text,
    with_estimated_starts,
)
from kubehpc.store.client import ListOptions, PatchType

KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"

RECENT_S = 300  # Slurm's MinJobAge: finished jobs stay in squeue this long
Obj = dict[str, Any]


def _parser(sub: Any, name: str, help_text: str) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(name, add_help=False, help=help_text)
    p.add_argument("--help", action="help", help="show this help")
    add_connection_flags(p)
    return p


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = _parser(sub, "squeue", "Slurm's queue view of sbatch jobs")
    p.add_argument("-j", "--jobs", action="append", help="job ids (12, 12_3, 12_[1-3])")
    p.add_argument("-u", "--user", action="append")
    p.add_argument("--me", action="store_true")
    p.add_argument("-p", "--partition", action="append")
    p.add_argument("-t", "--states", default="")
    p.add_argument("-n", "--name", action="append")
    p.add_argument("-A", "--account", action="append")
    p.add_argument("-q", "--qos", action="append")
    p.add_argument("-o", "--format", default="")
    p.add_argument("-O", "--Format", dest="long_format", default="")
    p.add_argument("-l", "--long", action="store_true")
    p.add_argument("-h", "--noheader", action="store_true")
    p.add_argument("-S", "--sort", default="", help="P,t,-p (default) or i (job id)")
    p.add_argument(
        "--start", action="store_true", help="pending jobs with the scheduler's estimated start times"
    )
    p.add_argument("--json", action="store_true")
    p.add_argument("-a", "--all", action="store_true", help="accepted for compatibility")
    p.set_defaults(run=run_squeue)

    p = _parser(sub, "sinfo", "Slurm's partition and node view")
    p.add_argument("-N", "--Node", action="store_true")
    p.add_argument("-l", "--long", action="store_true")
    p.add_argument("-o", "--format", default="")
    p.add_argument("-p", "--partition", action="append")
    p.add_argument("-h", "--noheader", action="store_true")
    p.add_argument("--mapping", default="")
    p.set_defaults(run=run_sinfo)

    p = _parser(sub, "sacct", "Slurm accounting view of sbatch jobs (finished and running)")
    p.add_argument("-j", "--jobs", action="append")
    p.add_argument("-u", "--user", action="append")
    p.add_argument("-a", "--allusers", action="store_true")
    p.add_argument("-s", "--state", default="")
    p.add_argument("-S", "--starttime", default="")
    p.add_argument("-o", "--format", default="")
    p.add_argument("-l", "--long", action="store_true")
    p.add_argument("-b", "--brief", action="store_true")
    p.add_argument("-P", "--parsable2", action="store_true")
    p.add_argument("-p", "--parsable", action="store_true")
    p.add_argument("-n", "--noheader", action="store_true")
    p.add_argument("-X", "--allocations", action="store_true", help="accepted: steps are not listed anyway")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run_sacct)

    p = _parser(sub, "scontrol", "show jobs, nodes, partitions, host lists; hold and release jobs")
    p.add_argument("verb", choices=("show", "hold", "release"))
    p.add_argument("words", nargs="*")
    p.add_argument("--mapping", default="")
    p.set_defaults(run=run_scontrol)

    p = _parser(sub, "scancel", "cancel sbatch jobs")
    p.add_argument("ids", nargs="*")
    p.add_argument("-u", "--user", action="append")
    p.add_argument("--me", action="store_true")
    p.add_argument("-p", "--partition", action="append")
    p.add_argument("-t", "--state", default="")
    p.add_argument("-n", "--name", "--jobname", dest="name", action="append")
    p.add_argument("-A", "--account", action="append")
    p.set_defaults(run=run_scancel)


def _now() -> float:
    return time.time()


def _fetch(session: Session, with_nodes: bool = False) -> tuple[list[Obj], list[Obj], list[Obj]]:
    client = session.client()
    ns = getattr(session.args, "namespace", None) or None
    opts = ListOptions(namespace=ns, label_selector=T.LABEL_JOB_ID)
    jobs = client.list("batch/v1", "Job", opts).items
    pods = client.list("v1", "Pod", opts if not with_nodes else ListOptions()).items
    nodes = client.list("v1", "Node").items if with_nodes else []
    return jobs, pods, nodes


def _filter(args: argparse.Namespace, states_text: str) -> Filter:
    try:
        users = split_list(getattr(args, "user", None))
        if getattr(args, "me", False):
            users.add(getpass.getuser())
        return Filter(
            refs=parse_job_ids(getattr(args, "jobs", None) or getattr(args, "ids", None) or []),
            users=users,
            partitions=split_list(getattr(args, "partition", None)),
            states=parse_states(states_text) if states_text else set(),
            names=split_list(getattr(args, "name", None)),
            accounts=split_list(getattr(args, "account", None)),
            qos=split_list(getattr(args, "qos", None)),
        )
    except SelectError as exc:
        raise CliError(str(exc)) from None


def run_squeue(session: Session, args: argparse.Namespace) -> int:
    jobs, pods, _ = _fetch(session)
    now = _now()
    flt = _filter(args, args.states)
    records = collect(jobs, pods)
    if flt.states == set():  # the default: active jobs, and finished ones for MinJobAge
        flt.states = None
        records = [r for r in records if r.state in ACTIVE or (r.end_time or now) >= now - RECENT_S]
    records = [r for r in records if flt.matches(r)]
    if not args.sort or args.sort == "P,t,-p":
        records = squeue_order(records)
    elif args.sort == "i":
        records = sorted(records, key=lambda r: r.array_job_id or r.numeric_id)
    else:
        raise CliError(f'squeue: --sort "{args.sort}": kubehpc sorts by the default (P,t,-p) or by i')
    if args.json:
        print(json.dumps(squeue_json(records, now), indent=2), file=session.stdout)
        return 0
    if args.long:
        print(time.strftime("%a %b %d %H:%M:%S %Y"), file=session.stdout)
    fmt = args.format or (SQUEUE_LONG if args.long else SQUEUE_DEFAULT)
    if args.start:
        # The estimates the scheduler wrote on each Job's Workload (controllers/kueue/estimates.py).
        workloads = session.client().list(KUEUE_API_VERSION, "Workload").items
        records = with_estimated_starts(records, estimated_starts_of(workloads))
        fmt = args.format or SQUEUE_START
    try:
        text = squeue_text(records, now, fmt, args.long_format, header=not args.noheader)
    except FormatError as exc:
        raise CliError(str(exc)) from None
    session.stdout.write(text)
    return 0


def run_sinfo(session: Session, args: argparse.Namespace) -> int:
    _, pods, nodes = _fetch(session, with_nodes=True)
    mapping = mapping_for(session, args.mapping or None)
    records = node_records(nodes, pods, mapping, mapping.gpu_resource)
    wanted = split_list(args.partition)
    if wanted:
        records = [r for r in records if set(r.partitions) & wanted]
    if args.Node:
        fmt = args.format or (SINFO_NODES_LONG if args.long else SINFO_NODES)
    else:
        fmt = args.format or (SINFO_LONG if args.long else SINFO_DEFAULT)
    if args.long:
        print(time.strftime("%a %b %d %H:%M:%S %Y"), file=session.stdout)
    try:
        session.stdout.write(sinfo_text(records, mapping, fmt, args.Node, header=not args.noheader))
    except FormatError as exc:
        raise CliError(str(exc)) from None
    return 0


def _since(text: str) -> float:
    if not text:
        midnight = datetime.now().replace(hour=0, minute=0, second=0, microsecond=0)
        return midnight.timestamp()
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise CliError(f'sacct: invalid --starttime "{text}": use YYYY-MM-DD[THH:MM[:SS]]') from None


def run_sacct(session: Session, args: argparse.Namespace) -> int:
    jobs, pods, _ = _fetch(session)
    now = _now()
    if not args.user and not args.allusers:
        args.user = [getpass.getuser()]
    flt = _filter(args, args.state)
    if flt.states == set():
        flt.states = None
    since = _since(args.starttime) if not args.jobs else 0.0
    records = [
        r
        for r in collect(jobs, pods)
        if flt.matches(r) and (r.end_time is None or r.end_time >= since) and not r.job_id.endswith("]")
    ]
    if args.json:
        print(json.dumps(sacct_json(records, now), indent=2), file=session.stdout)
        return 0
    fmt = args.format or (
        SACCT_LONG if args.long else "JobID,State,ExitCode" if args.brief else SACCT_DEFAULT
    )
    parsable = "P" if args.parsable2 else "p" if args.parsable else ""
    try:
        session.stdout.write(sacct_text(records, now, fmt, parsable, header=not args.noheader))
    except FormatError as exc:
        raise CliError(str(exc)) from None
    return 0


def _find_job(session: Session, job_id: str) -> Obj:
    if not job_id.isdigit():
        raise CliError(f'invalid job id "{job_id}"')
    client = session.client()
    ns = getattr(session.args, "namespace", None) or None
    found = client.list(
        "batch/v1", "Job", ListOptions(namespace=ns, label_selector=f"{T.LABEL_JOB_ID}={job_id}")
    ).items
    if not found:
        raise CliError(f"Invalid job id specified: {job_id}")
    return found[0]


def run_scontrol(session: Session, args: argparse.Namespace) -> int:
    words = list(args.words)
    if args.verb in ("hold", "release"):
        if not words:
            raise CliError(f"scontrol {args.verb}: give job ids")
        client = session.client()
        # Job ids come as separate words or comma lists ("12,13"), as in Slurm.
        job_ids = [i for word in words for i in word.split(",") if i]
        for job_id in job_ids:
            job = _find_job(session, job_id)
            # Kueue manages queued jobs here (as the control plane's own releases assume): it
            # unsuspends them on admission, and its webhook refuses a queued job unsuspended by hand.
            patch = T.hold_patch() if args.verb == "hold" else T.release_patch(job, kueue_manages=True)
            meta = job["metadata"]
            client.patch("batch/v1", "Job", meta["name"], patch, PatchType.MERGE, meta.get("namespace"))
        return 0
    if not words:
        raise CliError("scontrol show: what? (job, node, partition, hostnames, hostlist)")
    what, rest = words[0].lower(), words[1:]
    if what in ("hostnames", "hostname"):
        try:
            for name in hostlist.expand(rest[0] if rest else ""):
                print(name, file=session.stdout)
        except hostlist.HostlistError as exc:
            raise CliError(str(exc)) from None
        return 0
    if what == "hostlist":
        print(hostlist.compress(",".join(rest).split(",") if rest else []), file=session.stdout)
        return 0
    if what in ("job", "jobs"):
        jobs, pods, _ = _fetch(session)
        found = [r for r in collect(jobs, pods) if not rest or _matches_id(r, rest[0])]
        if not found:
            raise CliError(f"Invalid job id specified: {rest[0]}" if rest else "No jobs in the system")
        session.stdout.write("".join(scontrol_job(r, _now()) for r in found))
        return 0
    if what in ("node", "nodes", "partition", "partitions"):
        _, pods, nodes = _fetch(session, with_nodes=True)
        mapping = mapping_for(session, args.mapping or None)
        records = node_records(nodes, pods, mapping, mapping.gpu_resource)
        if what.startswith("node"):
            chosen = [r for r in records if not rest or r.name in hostlist.expand(rest[0])]
            if not chosen:
                raise CliError(f"Node {rest[0]} not found")
            session.stdout.write("".join(scontrol_node(r) for r in chosen))
        else:
            names = [p for p in partition_names(records, mapping) if not rest or p == rest[0]]
            if not names:
                raise CliError(f"Partition {rest[0]} not found")
            session.stdout.write("".join(scontrol_partition(p, records, mapping) for p in names))
        return 0
    raise CliError(f'scontrol show: unknown entity "{words[0]}"')


def _matches_id(r: SlurmJob, text: str) -> bool:
    return text in (r.job_id, str(r.numeric_id), str(r.array_job_id))


def run_scancel(session: Session, args: argparse.Namespace) -> int:
    flt = _filter(args, args.state)
    if flt.states == set():
        flt.states = None
    if not (flt.refs or flt.users or flt.partitions or flt.names or flt.accounts or args.state):
        raise CliError("No job identification provided")
    jobs, pods, _ = _fetch(session)
    client = session.client()
    now_iso = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    by_id = {int(j["metadata"]["labels"][T.LABEL_JOB_ID]): j for j in jobs}
    every = collect(jobs, pods)
    alive = [r for r in every if not r.finished]
    records = [r for r in alive if flt.matches(r)]
    failed = 0
    whole = {_owner_id(r) for r in records}
    task_refs = [ref for ref in flt.refs if ref.task is not None]
    known = set(by_id) | {r.numeric_id for r in every}
    for ref in flt.refs:
        if ref.job_id not in known:
            print(f"scancel: error: Invalid job id {ref.job_id}", file=session.stderr)
            failed += 1
        elif ref.task is not None and not any(_task_is(r, ref.job_id, ref.task) for r in alive):
            done = any(_task_is(r, ref.job_id, ref.task) for r in every)
            why = "Job/step already completing or completed" if done else "Invalid job id specified"
            print(
                f"scancel: error: Kill job error on job id {ref.job_id}_{ref.task}: {why}",
                file=session.stderr,
            )
            failed += 1
            task_refs.remove(ref)
    for job_id in sorted(whole):
        job = by_id[job_id]
        meta = job["metadata"]
        tasks: list[int | None] = [ref.task for ref in task_refs if ref.job_id == job_id]
        chosen = [r for r in records if _owner_id(r) == job_id]
        if not tasks and len(chosen) < len([r for r in alive if _owner_id(r) == job_id]):
            # A filter (-t, -u, ...) picked only part of an array: as in Slurm, only that
            # part stops, so its running tasks are cancelled one by one.
            tasks = [int(r.array_task) for r in chosen if r.array_task and r.array_task.isdigit()]
            if len(tasks) < len(chosen):
                print(
                    f"scancel: error: the pending tasks of array {job_id} cannot be cancelled apart "
                    f"from its running ones here; cancel the array ({job_id}) instead",
                    file=session.stderr,
                )
                failed += 1
            if not tasks:
                continue
        try:
            if tasks:
                failed += _cancel_tasks(session, job, pods, tasks, records)
            else:
                client.patch(
                    "batch/v1",
                    "Job",
                    meta["name"],
                    cancel_patch(now_iso),
                    PatchType.MERGE,
                    meta.get("namespace"),
                )
        except ApiError as exc:
            print(f"scancel: error: job {job_id}: {exc.message}", file=session.stderr)
            failed += 1
    return 1 if failed else 0


def _task_is(r: SlurmJob, job_id: int, task: int) -> bool:
    return Filter(refs=[JobRef(job_id, task)]).matches(r)


def _owner_id(r: SlurmJob) -> int:
    """The Slurm id of the Job a record belongs to (an array task's: the array's)."""
    return r.array_job_id or r.numeric_id


def _cancel_tasks(
    session: Session, job: Obj, pods: list[Obj], tasks: list[int | None], records: list[SlurmJob]
) -> int:
    """Running tasks of an array stop (their pods are deleted; the index counts as failed). A
    pending task cannot be taken out of an Indexed Job on its own: say so."""
    job_id = int(job["metadata"]["labels"][T.LABEL_JOB_ID])
    running = {
        int(r.array_task): r
        for r in records
        if r.array_job_id == job_id and r.array_task and r.array_task.isdigit()
    }
    failed = 0
    uid = job["metadata"].get("uid")
    from kubehpc.slurm.specs import parse_array

    ids = parse_array(job["metadata"]["annotations"][T.ANN_ARRAY]).task_ids
    for task in tasks:
        if task not in ids:
            print(f"scancel: error: Invalid job id {job_id}_{task}", file=session.stderr)
            failed += 1
            continue
        if task not in running or running[task].state != "RUNNING":
            print(
                f"scancel: error: job {job_id}_{task} is pending; a pending array task cannot be cancelled "
                f"alone here, cancel the array ({job_id}) instead",
                file=session.stderr,
            )
            failed += 1
            continue
        index = ids.index(task)
        meta = job["metadata"]
        already = str((meta.get("annotations") or {}).get(ANN_CANCELLED_TASKS, ""))
        listed = ",".join(t for t in [*already.split(","), str(task)] if t)
        session.client().patch(
            "batch/v1",
            "Job",
            meta["name"],
            {"metadata": {"annotations": {ANN_CANCELLED_TASKS: listed}}},
            PatchType.MERGE,
            meta.get("namespace"),
        )
        meta.setdefault("annotations", {})[ANN_CANCELLED_TASKS] = listed
        for p in pods:
            refs = p["metadata"].get("ownerReferences") or []
            if any(r.get("uid") == uid for r in refs) and pod_index(p) == index:
                session.client().delete("v1", "Pod", p["metadata"]["name"], p["metadata"].get("namespace"))
    return failed
