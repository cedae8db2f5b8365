"""From an sbatch command line and script to a resolved :class:`JobRequest`.

Directives come first, in script order, then the command line: for each option the last one
written wins (so the command line overrides the script). Every value is checked here; an
error names where the bad value was written (``job.sh: line 7: --time: ...`` or
``command line: --time: ...``).

Resources follow Slurm's arithmetic, per node (= per pod):

* nodes: ``-N`` (the minimum of a range; see the ``nodes`` note), else enough nodes for
  ``--ntasks`` at ``--ntasks-per-node``, else 1;
* tasks per node: ``--ntasks-per-node`` (capped by ``ceil(ntasks / nodes)`` when both are given,
  as ``--ntasks`` takes precedence), else ``ceil(ntasks / nodes)``, else 1;
* CPUs: tasks per node x ``--cpus-per-task`` (default 1), or GPUs x ``--cpus-per-gpu``;
* GPUs: ``--gres=gpu[:type]:N`` or ``--gpus-per-node``, or ``--gpus-per-task`` x tasks per node,
  or ``ceil(--gpus / nodes)``;
* memory: ``--mem`` (per node), ``--mem-per-cpu`` x CPUs or ``--mem-per-gpu`` x GPUs (one of
  them); none: the partition's ``defMemPerCpu`` from the mapping, else no memory request.
  ``--mem=0`` ("all of the node's memory") requests the whole node, as ``--exclusive`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from kubehpc.slurm import specs
from kubehpc.slurm.mapping import SlurmMapping
from kubehpc.slurm.options import Given, OptionError, ReadResult, Support, read_options
from kubehpc.slurm.script import ScriptError, read_directives, wrap_script
from kubehpc.slurm.timefmt import TimeFormatError, parse_begin, parse_time_limit

DEFAULT_OUTPUT = "slurm-%j.out"
DEFAULT_ARRAY_OUTPUT = "slurm-%A_%a.out"
DEFAULT_NICE = 100


class SbatchError(ValueError):
    """A submission that cannot be made; the message names the file and line or the command line."""


class BadValue(SbatchError):
    """An option whose own value is malformed. sbatch checks each value as it reads the option,
    so of several such options it reports the first it reads (the script's directives in file
    order, then the command line); checks between options come after all are read."""


@dataclass(frozen=True)
class Recorded:
    option: str
    value: str
    where: str
    why: str


@dataclass(frozen=True)
class ExportSpec:
    mode: str
    """ALL (the submit environment) or NONE (only what the list names)."""
    names: tuple[str, ...] = ()
    values: tuple[tuple[str, str], ...] = ()
    text: str = ""


@dataclass
class JobRequest:
    script: str
    script_name: str
    script_args: list[str]
    name: str
    user: str
    submit_host: str
    submit_dir: str
    work_dir: str
    nodes: int = 1
    nodes_max: int = 1
    ntasks: int = 1
    tasks_per_node: int = 1
    cpus_per_task: int = 1
    cpus_per_node: int = 1
    mem_per_node_mb: int | None = None
    mem_per_cpu_mb: int | None = None
    mem_per_gpu_mb: int | None = None
    tmp_mb: int | None = None
    gpus_per_node: int = 0
    gpus_total: int | None = None
    gpus_per_task: int | None = None
    gpu_type: str = ""
    other_gres: list[specs.Gres] = field(default_factory=list)
    time_limit_s: int | None = None
    partition: str = ""
    qos: str = ""
    account: str = ""
    exclusive: bool = False
    whole_node_memory: bool = False
    constraint: str = ""
    constraint_terms: list[list[str]] = field(default_factory=list)
    array: specs.ArraySpec | None = None
    dependency: specs.Dependency | None = None
    output: str = DEFAULT_OUTPUT
    error: str | None = None
    input: str | None = None
    open_mode: str = "truncate"
    export: ExportSpec = field(default_factory=lambda: ExportSpec("ALL"))
    environment: dict[str, str] = field(default_factory=dict)
    """Variables the job gets from --export (already chosen from the submit environment)."""
    begin: datetime | None = None
    nice: int | None = None
    hold: bool = False
    nodelist: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    comment: str = ""
    parsable: bool = False
    job_id: int | None = None
    given: dict[str, str] = field(default_factory=dict)
    """Option -> value as finally in force (for annotations and scontrol)."""
    recorded: list[Recorded] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Submission:
    """What the command line and the environment say, before the script is read."""

    argv: list[str]
    environ: Mapping[str, str]
    cwd: str
    user: str
    submit_host: str
    now: datetime


def parse_command_line(argv: list[str]) -> ReadResult:
    try:
        return read_options(argv, "command line", stop_at_positional=True)
    except OptionError as exc:
        raise SbatchError(f"command line: {exc}") from None


def build_request(
    sub: Submission, script_text: str | None, script_name: str, mapping: SlurmMapping | None = None
) -> JobRequest:
    """The request a command line (and the script it names, already read) makes."""
    mapping = mapping or SlurmMapping()
    cmd = parse_command_line(sub.argv)
    warnings = [f"command line: unknown option {u} ignored" for u in cmd.unknown]
    wrap = next((g.value for g in reversed(cmd.given) if g.spec.long == "wrap"), None)
    args = list(cmd.positional)
    if wrap is not None:
        if args:
            raise SbatchError("command line: --wrap and a script file cannot both be given")
        script_text, script_name = wrap_script(wrap), "--wrap"
    elif script_text is None:
        raise SbatchError("command line: no batch script given")
    else:
        args = args[1:]
    try:
        found = read_directives(script_text)
    except ScriptError as exc:
        raise SbatchError(f"{script_name}: {exc}") from None
    warnings += [f"{script_name}: {w}" for w in found.warnings]
    given: list[Given] = []
    for d in found.directives:
        where = f"{script_name}: line {d.line}"
        try:
            result = read_options(list(d.words), where, stop_at_positional=False)
        except OptionError as exc:
            raise SbatchError(f"{where}: {exc}") from None
        given += result.given
        warnings += [f"{where}: unknown option {u} ignored" for u in result.unknown]
        warnings += [f'{where}: unexpected argument "{p}" ignored' for p in result.positional]
    given += cmd.given

    def new_request() -> JobRequest:
        return JobRequest(
            script=script_text,
            script_name=script_name,
            script_args=args,
            name="wrap" if wrap is not None else (script_name.rsplit("/", 1)[-1] or "sbatch"),
            user=sub.user,
            submit_host=sub.submit_host,
            submit_dir=sub.cwd,
            work_dir=sub.cwd,
            warnings=list(warnings),
        )

    req = new_request()
    try:
        _apply(req, given, sub, mapping)
    except SbatchError:
        _raise_first_bad_value(new_request, given, sub, mapping)
        raise
    return req


def _raise_first_bad_value(
    new_request: Callable[[], JobRequest], given: list[Given], sub: Submission, mapping: SlurmMapping
) -> None:
    """Raise the :class:`BadValue` of the first option read whose value is malformed, if any:
    each option is checked alone, in the order sbatch reads them (checks between options say
    nothing about one option alone and are left to the whole request)."""
    for g in given:
        try:
            _apply(new_request(), [g], sub, mapping)
        except BadValue:
            raise
        except SbatchError:
            continue


def _last(given: list[Given]) -> dict[str, Given]:
    out: dict[str, Given] = {}
    for g in given:
        out[g.spec.long] = g
    return out


class _Checker:
    def __init__(self, opts: dict[str, Given]) -> None:
        self.opts = opts

    def value(self, name: str) -> str | None:
        g = self.opts.get(name)
        return None if g is None else g.value

    def fail(self, name: str, message: str) -> SbatchError:
        g = self.opts[name]
        return SbatchError(f"{g.where}: --{name}: {message}")

    def bad(self, name: str, message: str) -> BadValue:
        """Option ``name``'s own value is malformed (see :class:`BadValue`)."""
        g = self.opts[name]
        return BadValue(f"{g.where}: --{name}: {message}")

    def integer(self, name: str, allow_zero: bool = False) -> int | None:
        v = self.value(name)
        if v is None:
            return None
        try:
            return specs.positive_int(v, name, allow_zero)
        except ValueError as exc:
            raise self.bad(name, str(exc)) from None

    def mem(self, name: str) -> int | None:
        v = self.value(name)
        if v is None:
            return None
        try:
            return specs.parse_mem_mb(v)
        except ValueError as exc:
            raise self.bad(name, str(exc)) from None

    def count_with_type(self, name: str) -> tuple[str, int] | None:
        """``[type:]N`` of --gpus, --gpus-per-node and --gpus-per-task."""
        v = self.value(name)
        if v is None:
            return None
        gtype, _, count = v.rpartition(":")
        if gtype.startswith("gpu:"):
            gtype = gtype[4:]
        if not count.isdigit():
            raise self.bad(name, f'invalid GPU count "{v}": use [TYPE:]N')
        return gtype, int(count)


def _apply(req: JobRequest, given: list[Given], sub: Submission, mapping: SlurmMapping) -> None:
    for g in given:
        if g.spec.support is not Support.SUPPORTED:
            req.recorded.append(Recorded(g.spec.long, g.value, g.where, g.spec.why))
    opts = _last(given)
    req.given = {k: g.value for k, g in opts.items()}
    c = _Checker(opts)
    if (v := c.value("job-name")) is not None:
        req.name = v
    req.partition = c.value("partition") or mapping.default_partition or ""
    req.qos = c.value("qos") or ""
    req.account = c.value("account") or ""
    req.comment = c.value("comment") or ""
    req.parsable = "parsable" in opts
    if (v := c.value("chdir")) is not None:
        req.work_dir = _absolute(v, sub.cwd)
    req.job_id = c.integer("jobid")
    _resources(req, c, mapping)
    _time(req, c, sub, mapping)
    _placement(req, c)
    _workflow(req, c)
    _io(req, c)
    _export(req, c, sub.environ)


def _absolute(path: str, cwd: str) -> str:
    if path.startswith("/"):
        return path
    base = cwd.rstrip("/")
    return base if path in (".", "") else f"{base}/{path.removeprefix('./')}"


def _resources(req: JobRequest, c: _Checker, mapping: SlurmMapping) -> None:
    nodes_given = c.value("nodes")
    if nodes_given is not None:
        try:
            req.nodes, req.nodes_max = specs.parse_nodes(nodes_given)
        except ValueError as exc:
            raise c.bad("nodes", str(exc)) from None
        if req.nodes_max != req.nodes:
            req.warnings.append(
                f"{c.opts['nodes'].where}: --nodes={nodes_given}: the job gets {req.nodes} nodes "
                "(the minimum); node ranges are not grown at start"
            )
    ntasks = c.integer("ntasks")
    tpn = c.integer("ntasks-per-node")
    if nodes_given is None:
        req.nodes = -(-ntasks // tpn) if ntasks and tpn else 1
        req.nodes_max = req.nodes
    if ntasks is not None:
        per = -(-ntasks // req.nodes)
        req.tasks_per_node = min(tpn, per) if tpn else per
        req.ntasks = ntasks
    else:
        req.tasks_per_node = tpn or 1
        req.ntasks = req.nodes * req.tasks_per_node
    req.cpus_per_task = c.integer("cpus-per-task") or 1
    _gpus(req, c)
    cpus_per_gpu = c.integer("cpus-per-gpu")
    if cpus_per_gpu is not None and "cpus-per-task" in c.opts:
        raise c.fail("cpus-per-gpu", "--cpus-per-gpu and --cpus-per-task are mutually exclusive")
    if cpus_per_gpu is not None:
        if not req.gpus_per_node:
            raise c.fail("cpus-per-gpu", "needs GPUs (--gres=gpu:N, --gpus...)")
        req.cpus_per_node = cpus_per_gpu * req.gpus_per_node
    else:
        req.cpus_per_node = req.tasks_per_node * req.cpus_per_task
    memory_options = [m for m in ("mem", "mem-per-cpu", "mem-per-gpu") if m in c.opts]
    if len(memory_options) > 1:
        names = ", ".join(f"--{m}" for m in memory_options)
        raise c.fail(memory_options[-1], f"{names} are mutually exclusive")
    req.mem_per_node_mb = c.mem("mem")
    req.mem_per_cpu_mb = c.mem("mem-per-cpu")
    req.mem_per_gpu_mb = c.mem("mem-per-gpu")
    if req.mem_per_gpu_mb is not None and not req.gpus_per_node:
        raise c.fail("mem-per-gpu", "needs GPUs (--gres=gpu:N, --gpus...)")
    if req.mem_per_node_mb == 0:
        req.mem_per_node_mb = None
        req.whole_node_memory = True
    if not memory_options and (default := mapping.partition(req.partition).def_mem_per_cpu):
        req.mem_per_cpu_mb = default
    req.tmp_mb = c.mem("tmp")


def _gpus(req: JobRequest, c: _Checker) -> None:
    if (gres := c.value("gres")) is not None:
        try:
            parsed = specs.parse_gres(gres)
        except ValueError as exc:
            raise c.bad("gres", str(exc)) from None
        for g in parsed:
            if g.name == "gpu":
                req.gpus_per_node, req.gpu_type = g.count, g.type
            else:
                req.other_gres.append(g)
                where = c.opts["gres"].where
                req.warnings.append(f'{where}: --gres={gres}: "{g.name}" has no equivalent; ignored')
    for name in ("gpus-per-node", "gpus-per-task", "gpus"):
        found = c.count_with_type(name)
        if found is None:
            continue
        gtype, count = found
        req.gpu_type = gtype or req.gpu_type
        if name == "gpus-per-node":
            req.gpus_per_node = count
        elif name == "gpus-per-task":
            req.gpus_per_task = count
            req.gpus_per_node = count * req.tasks_per_node
        else:
            req.gpus_total = count
            req.gpus_per_node = -(-count // req.nodes)
            if count % req.nodes:
                req.warnings.append(
                    f"{c.opts['gpus'].where}: --gpus={count} over {req.nodes} nodes: "
                    f"each node gets {req.gpus_per_node}"
                )


def _time(req: JobRequest, c: _Checker, sub: Submission, mapping: SlurmMapping) -> None:
    part = mapping.partition(req.partition)
    if (v := c.value("time")) is not None:
        try:
            req.time_limit_s = parse_time_limit(v)
        except TimeFormatError as exc:
            raise c.bad("time", str(exc)) from None
        if part.max_time and (req.time_limit_s is None or req.time_limit_s > part.max_time * 60):
            req.warnings.append(
                f"{c.opts['time'].where}: --time={v} is over partition {req.partition}'s MaxTime "
                f"({part.max_time} minutes); Slurm would leave the job pending (PartitionTimeLimit)"
            )
    elif (default := part.default_time or part.max_time) is not None:
        # As Slurm: without -t, the partition's DefaultTime, else its MaxTime.
        req.time_limit_s = default * 60
    if (v := c.value("begin")) is not None:
        try:
            req.begin = parse_begin(v, sub.now)
        except TimeFormatError as exc:
            raise c.bad("begin", str(exc)) from None
    if "nice" in c.opts:
        v = c.value("nice") or str(DEFAULT_NICE)
        try:
            req.nice = int(v)
        except ValueError:
            raise c.bad("nice", f'invalid nice value "{v}": must be a whole number') from None


def _placement(req: JobRequest, c: _Checker) -> None:
    from kubehpc.slurm.hostlist import HostlistError, expand

    if "exclusive" in c.opts:
        req.exclusive = True
        mode = c.value("exclusive") or ""
        if mode and mode not in ("user", "mcs", "topo"):
            raise c.bad("exclusive", f'invalid value "{mode}": use --exclusive, =user, =mcs or =topo')
        if mode:
            req.warnings.append(
                f"{c.opts['exclusive'].where}: --exclusive={mode} is taken as --exclusive (whole nodes)"
            )
    if req.whole_node_memory:
        req.exclusive = True
    if (v := c.value("constraint")) is not None:
        try:
            req.constraint_terms = specs.parse_constraint(v)
        except ValueError as exc:
            raise c.bad("constraint", str(exc)) from None
        req.constraint = v
    for name in ("nodelist", "exclude"):
        if (v := c.value(name)) is not None:
            try:
                hosts = expand(v)
            except HostlistError as exc:
                raise c.bad(name, str(exc)) from None
            setattr(req, name, hosts)
    if req.nodelist and len(req.nodelist) < req.nodes:
        req.warnings.append(
            f"{c.opts['nodelist'].where}: --nodelist names {len(req.nodelist)} nodes for a "
            f"{req.nodes}-node job; the pods may run on any of them"
        )


def _workflow(req: JobRequest, c: _Checker) -> None:
    if (v := c.value("array")) is not None:
        try:
            req.array = specs.parse_array(v)
        except ValueError as exc:
            raise c.bad("array", str(exc)) from None
        if req.nodes > 1:
            raise c.fail("array", "arrays of multi-node jobs are not supported yet")
    if (v := c.value("dependency")) is not None:
        try:
            req.dependency = specs.parse_dependency(v) if v.strip() else None
        except ValueError as exc:
            raise c.bad("dependency", str(exc)) from None
    req.hold = "hold" in c.opts


def _io(req: JobRequest, c: _Checker) -> None:
    default = DEFAULT_ARRAY_OUTPUT if req.array else DEFAULT_OUTPUT
    for name in ("output", "error", "input"):
        v = c.value(name)
        if v is not None and (not v or "\0" in v or "\n" in v):
            raise c.bad(name, f"invalid file name {v!r}")
    req.output = c.value("output") or default
    req.error = c.value("error")
    req.input = c.value("input")
    if (v := c.value("open-mode")) is not None:
        if v not in ("append", "truncate"):
            raise c.bad("open-mode", f'invalid value "{v}": use append or truncate')
        req.open_mode = v


# Never copied from the submit environment: they describe the submitting shell or the client,
# not the job (Slurm sets the SLURM_* ones itself).
_NOT_EXPORTED_PREFIXES = ("SLURM_", "KUBEHPC_", "BASH_FUNC_")
_NOT_EXPORTED = frozenset({"KUBECONFIG", "PWD", "OLDPWD", "SHLVL", "_", "HOSTNAME", "PS1", "PS2"})


def _exportable(name: str) -> bool:
    return (
        bool(name)
        and "=" not in name
        and name.isprintable()
        and name not in _NOT_EXPORTED
        and not name.startswith(_NOT_EXPORTED_PREFIXES)
    )


def _export(req: JobRequest, c: _Checker, environ: Mapping[str, str]) -> None:
    text = c.value("export")
    if text is None:
        req.export = ExportSpec("ALL")
    else:
        mode = "NONE"
        names: list[str] = []
        values: list[tuple[str, str]] = []
        for item in (p.strip() for p in text.split(",")):
            if not item:
                continue
            if item.upper() in ("ALL", "NONE", "NIL"):
                mode = "ALL" if item.upper() == "ALL" else "NONE"
                continue
            name, eq, value = item.partition("=")
            if not _exportable(name) and not name.startswith("SLURM_"):
                raise c.bad("export", f'invalid variable name "{name}"')
            if eq:
                values.append((name, value))
            else:
                names.append(name)
        req.export = ExportSpec(mode, tuple(names), tuple(values), text)
    env: dict[str, str] = {}
    if req.export.mode == "ALL":
        env.update({k: v for k, v in environ.items() if _exportable(k)})
    for name in req.export.names:
        if name in environ:
            env[name] = environ[name]
    env.update(dict(req.export.values))
    req.environment = env
