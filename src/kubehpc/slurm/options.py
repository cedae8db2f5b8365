"""sbatch's options: the table, and a getopt_long-style reader shared by ``#SBATCH`` lines and
the command line.

Each option is one of:

* ``SUPPORTED`` — translated into the Kubernetes objects;
* ``RECORDED`` — kept as an annotation and shown, but kubehpc does not act on it (yet), so the
  job behaves differently from Slurm in that respect (``--mail-type``: no mail is sent);
* ``IGNORED`` — no effect at all (CPU binding and other node-local tuning); a warning names it.

Options unknown to sbatch are skipped with a warning naming them (sbatch itself stops there;
kubehpc keeps going so that one site-specific option does not block a migration). Long options
may be abbreviated to any unique prefix, as getopt_long allows (``--part=gpu``); an ambiguous
prefix is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Support(Enum):
    SUPPORTED = "supported"
    RECORDED = "recorded"
    IGNORED = "ignored"


class Arg(Enum):
    NONE = 0
    REQUIRED = 1
    OPTIONAL = 2


@dataclass(frozen=True)
class OptionSpec:
    long: str
    short: str = ""
    arg: Arg = Arg.REQUIRED
    support: Support = Support.SUPPORTED
    why: str = ""
    """For RECORDED and IGNORED options: what differs from Slurm."""


S, R, I = Support.SUPPORTED, Support.RECORDED, Support.IGNORED  # noqa: E741
_NO_MAIL = "no mail is sent"
_NODE_LOCAL = "node-local CPU/memory layout is left to the node"

OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("job-name", "J"),
    OptionSpec("nodes", "N"),
    OptionSpec("ntasks", "n"),
    OptionSpec("ntasks-per-node"),
    OptionSpec("cpus-per-task", "c"),
    OptionSpec("cpus-per-gpu"),
    OptionSpec("mem"),
    OptionSpec("mem-per-cpu"),
    OptionSpec("mem-per-gpu"),
    OptionSpec("tmp"),
    OptionSpec("gpus", "G"),
    OptionSpec("gpus-per-node"),
    OptionSpec("gpus-per-task"),
    OptionSpec("gres"),
    OptionSpec("time", "t"),
    OptionSpec("partition", "p"),
    OptionSpec("qos", "q"),
    OptionSpec("account", "A"),
    OptionSpec("exclusive", arg=Arg.OPTIONAL),
    OptionSpec("constraint", "C"),
    OptionSpec("array", "a"),
    OptionSpec("dependency", "d"),
    OptionSpec("output", "o"),
    OptionSpec("error", "e"),
    OptionSpec("input", "i"),
    OptionSpec("open-mode"),
    OptionSpec("chdir", "D"),
    OptionSpec("export"),
    OptionSpec("begin", "b"),
    OptionSpec("nice", arg=Arg.OPTIONAL),
    OptionSpec("hold", "H", Arg.NONE),
    OptionSpec("wrap"),
    OptionSpec("nodelist", "w"),
    OptionSpec("exclude", "x"),
    OptionSpec("comment"),
    OptionSpec("parsable", arg=Arg.OPTIONAL),
    OptionSpec("jobid"),
    OptionSpec("quiet", "Q", Arg.NONE),
    OptionSpec("verbose", "v", Arg.NONE),
    OptionSpec("mail-type", support=R, why=_NO_MAIL),
    OptionSpec("mail-user", support=R, why=_NO_MAIL),
    OptionSpec("reservation", support=R, why="reservations are not modelled; the job is queued normally"),
    OptionSpec("time-min", support=R, why="the job always gets its full --time"),
    OptionSpec("requeue", arg=Arg.NONE, support=R, why="a failed or preempted job is not requeued"),
    OptionSpec("no-requeue", arg=Arg.NONE, support=R, why="jobs are never requeued anyway"),
    OptionSpec("priority", support=R, why="only an administrator's priority class sets priority"),
    OptionSpec("licenses", "L", support=R, why="licenses are not counted"),
    OptionSpec("signal", support=R, why="the job gets SIGTERM at its limit, as any pod"),
    OptionSpec("switches", support=R, why="use topology requests of the queue instead"),
    OptionSpec("deadline", support=R, why="the job is not removed at its deadline"),
    OptionSpec("wait", "W", Arg.NONE, support=R, why="sbatch returns at once"),
    OptionSpec("kill-on-invalid-dep", support=R, why="a never-satisfiable dependency leaves the job held"),
    OptionSpec("clusters", "M", support=R, why="there is one cluster"),
    OptionSpec("uid", support=R, why="jobs run as the node agent's user"),
    OptionSpec("gid", support=R, why="jobs run as the node agent's group"),
    OptionSpec("container", support=R, why="the pod's image comes from the admin mapping"),
    OptionSpec("hint", support=I, why=_NODE_LOCAL),
    OptionSpec("threads-per-core", support=I, why=_NODE_LOCAL),
    OptionSpec("cores-per-socket", support=I, why=_NODE_LOCAL),
    OptionSpec("sockets-per-node", support=I, why=_NODE_LOCAL),
    OptionSpec("extra-node-info", "B", support=I, why=_NODE_LOCAL),
    OptionSpec("ntasks-per-core", support=I, why=_NODE_LOCAL),
    OptionSpec("ntasks-per-socket", support=I, why=_NODE_LOCAL),
    OptionSpec("ntasks-per-gpu", support=I, why=_NODE_LOCAL),
    OptionSpec("gpus-per-socket", support=I, why=_NODE_LOCAL),
    OptionSpec("overcommit", "O", Arg.NONE, support=I, why="CPUs are requested as asked"),
    OptionSpec("oversubscribe", "s", Arg.NONE, support=I, why="sharing is the scheduler's business"),
    OptionSpec("contiguous", arg=Arg.NONE, support=I, why="node names carry no contiguity"),
    OptionSpec("distribution", "m", support=I, why=_NODE_LOCAL),
    OptionSpec("mem-bind", support=I, why=_NODE_LOCAL),
    OptionSpec("cpu-bind", support=I, why=_NODE_LOCAL),
    OptionSpec("gpu-bind", support=I, why=_NODE_LOCAL),
    OptionSpec("gpu-freq", support=I, why=_NODE_LOCAL),
    OptionSpec("cpu-freq", support=I, why=_NODE_LOCAL),
    OptionSpec("core-spec", "S", support=I, why=_NODE_LOCAL),
    OptionSpec("thread-spec", support=I, why=_NODE_LOCAL),
    OptionSpec("mincpus", support=I, why="CPUs per node follow from tasks and cpus-per-task"),
    OptionSpec("use-min-nodes", arg=Arg.NONE, support=I, why="the minimum node count is always used"),
    OptionSpec("spread-job", arg=Arg.NONE, support=I, why="placement is the scheduler's business"),
    OptionSpec("propagate", arg=Arg.OPTIONAL, support=I, why="resource limits are not propagated"),
    OptionSpec("get-user-env", arg=Arg.OPTIONAL, support=I, why="the submit environment is used"),
    OptionSpec("acctg-freq", support=I, why="no accounting sampling"),
    OptionSpec("profile", support=I, why="no profiling"),
    OptionSpec("network", support=I, why="no network options"),
    OptionSpec("mcs-label", support=I, why="no MCS"),
    OptionSpec("power", support=I, why="no power management"),
    OptionSpec("delay-boot", support=I, why="nodes are not rebooted"),
    OptionSpec("reboot", arg=Arg.NONE, support=I, why="nodes are not rebooted"),
    OptionSpec("no-kill", "k", Arg.OPTIONAL, support=I, why="a lost node ends the pod"),
    OptionSpec("prefer", support=I, why="soft constraints are not used"),
    OptionSpec("test-only", arg=Arg.NONE, support=I, why="use --dry-run"),
)

_BY_LONG = {o.long: o for o in OPTIONS}
_BY_SHORT = {o.short: o for o in OPTIONS if o.short}


class OptionError(ValueError):
    pass


@dataclass(frozen=True)
class Given:
    """One option as written: its spec, its value ("" for flags) and where it was written."""

    spec: OptionSpec
    value: str
    where: str


def lookup_long(name: str) -> OptionSpec | None:
    """The option ``--name`` (or a unique abbreviation) means; None when sbatch has none."""
    if name in _BY_LONG:
        return _BY_LONG[name]
    matches = [o for long, o in _BY_LONG.items() if long.startswith(name)]
    if len(matches) == 1:
        return matches[0]
    if not matches or not name:
        return None
    names = ", ".join(f"--{o.long}" for o in matches)
    raise OptionError(f'option "--{name}" is ambiguous ({names})')


@dataclass
class ReadResult:
    given: list[Given]
    positional: list[str]
    unknown: list[str]
    """Unknown options as written, for the warning."""


def read_options(tokens: list[str], where: str, stop_at_positional: bool) -> ReadResult:
    """Options from ``tokens`` in order, and the positional arguments. With
    ``stop_at_positional`` (the command line), the first positional argument and everything
    after it are positional, as sbatch reads ``sbatch [options] script [args...]``."""
    given: list[Given] = []
    rest: list[str] = []
    unknown: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if tok == "--":
            rest.extend(tokens[i:])
            break
        if tok.startswith("--"):
            name, eq, value = tok[2:].partition("=")
            found = lookup_long(name)
            if found is None:
                unknown.append(tok)
                continue
            spec = found
            if spec.arg is Arg.NONE:
                if eq:
                    raise OptionError(f'option "--{spec.long}" takes no value')
                given.append(Given(spec, "", where))
            elif eq or spec.arg is Arg.OPTIONAL:
                given.append(Given(spec, value, where))
            else:
                if i >= len(tokens):
                    raise OptionError(f'option "--{spec.long}" requires a value')
                given.append(Given(spec, tokens[i], where))
                i += 1
            continue
        if tok.startswith("-") and len(tok) > 1:
            j = 1
            while j < len(tok):
                letter = tok[j]
                found = _BY_SHORT.get(letter)
                if found is None:
                    unknown.append(f"-{letter}")
                    j += 1
                    continue
                spec = found
                j += 1
                if spec.arg is Arg.NONE:
                    given.append(Given(spec, "", where))
                    continue
                if j < len(tok):
                    given.append(Given(spec, tok[j:], where))
                elif spec.arg is Arg.OPTIONAL:
                    given.append(Given(spec, "", where))
                else:
                    if i >= len(tokens):
                        raise OptionError(f'option "-{letter}" requires a value')
                    given.append(Given(spec, tokens[i], where))
                    i += 1
                break
            continue
        if stop_at_positional:
            rest.extend(tokens[i - 1 :])
            break
        rest.append(tok)
    return ReadResult(given, rest, unknown)


def value_follows(token: str) -> bool:
    """Whether ``token`` (an option as written) takes the next word as its value."""
    if token.startswith("--"):
        name, eq, _ = token[2:].partition("=")
        spec = lookup_long(name)
        return spec is not None and not eq and spec.arg is Arg.REQUIRED
    if token.startswith("-") and len(token) > 1:
        for j, letter in enumerate(token[1:], start=1):
            spec = _BY_SHORT.get(letter)
            if spec is None or spec.arg is Arg.NONE:
                continue
            return j == len(token) - 1 and spec.arg is Arg.REQUIRED
    return False
