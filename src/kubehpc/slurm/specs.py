"""Small value syntaxes of sbatch options: memory sizes, --array, --dependency, --constraint,
--gres and --nodes ranges. Each parser raises ValueError with a message naming the value."""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_ARRAY_TASKS = 100_000  # an Indexed Job's completions limit

# --- memory --------------------------------------------------------------------------------

_MEM_UNITS = {"": 1, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


def parse_mem_mb(text: str) -> int:
    """Megabytes (MiB) of a Slurm memory size: a number with an optional K, M, G or T suffix
    (binary units; default M). ``0`` is kept as 0: "all the memory of the node"."""
    m = re.fullmatch(r"(\d+)([A-Za-z]?)[Bb]?", text.strip())
    if not m:
        raise ValueError(f'invalid memory size "{text}": use a number with an optional K, M, G or T suffix')
    unit = m.group(2).upper()
    if unit not in _MEM_UNITS:
        raise ValueError(f'invalid memory size "{text}": unknown unit "{m.group(2)}"; use K, M, G or T')
    return -(-int(int(m.group(1)) * _MEM_UNITS[unit] * 1024) // 1024)


def mb_quantity(mb: int) -> str:
    """A Kubernetes quantity for ``mb`` MiB, in Gi when whole."""
    return f"{mb // 1024}Gi" if mb % 1024 == 0 else f"{mb}Mi"


# --- --nodes -------------------------------------------------------------------------------


def parse_nodes(text: str) -> tuple[int, int]:
    """``N`` or ``MIN-MAX`` -> (min, max)."""
    m = re.fullmatch(r"(\d+)(?:-(\d+))?", text.strip())
    if not m:
        raise ValueError(f'invalid node count "{text}": use N or MIN-MAX')
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) else lo
    if lo < 1 or hi < lo:
        raise ValueError(f'invalid node count "{text}": need 1 <= MIN <= MAX')
    return lo, hi


def positive_int(text: str, what: str, allow_zero: bool = False) -> int:
    if not text.strip().isdigit() or (int(text) == 0 and not allow_zero):
        least = "0" if allow_zero else "1"
        raise ValueError(f'invalid {what} "{text}": must be a whole number >= {least}')
    return int(text)


# --- --array -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArraySpec:
    text: str
    """The task-id part as written, without the throttle (``0-15:4,20``)."""
    task_ids: tuple[int, ...]
    throttle: int | None

    @property
    def count(self) -> int:
        return len(self.task_ids)

    @property
    def step(self) -> int:
        """SLURM_ARRAY_TASK_STEP: the step of a single ``a-b:s`` range, else 1."""
        m = re.fullmatch(r"\d+-\d+:(\d+)", self.text)
        return int(m.group(1)) if m else 1


def parse_array(text: str) -> ArraySpec:
    """``0-15``, ``0,6,16-32``, ``0-15:4``, ``1-7%2``; ids in the order written, duplicates
    dropped, as Slurm's bitmap does (so in ascending order)."""
    spec, pct, throttle_text = text.strip().partition("%")
    throttle = None
    if pct:
        if not throttle_text.isdigit() or int(throttle_text) < 1:
            raise ValueError(f'invalid array "{text}": the throttle after % must be a whole number >= 1')
        throttle = int(throttle_text)
    ids: set[int] = set()
    for piece in spec.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", piece.strip())
        if not m:
            raise ValueError(
                f'invalid array "{text}": bad piece "{piece}"; use N, A-B, A-B:STEP, lists and %MAX'
            )
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        step = int(m.group(3)) if m.group(3) else 1
        if hi < lo or step < 1:
            raise ValueError(f'invalid array "{text}": range "{piece}" is empty')
        if (hi - lo) // step + 1 + len(ids) > MAX_ARRAY_TASKS:
            raise ValueError(f'invalid array "{text}": more than {MAX_ARRAY_TASKS} tasks')
        ids.update(range(lo, hi + 1, step))
    return ArraySpec(spec.strip(), tuple(sorted(ids)), throttle)


def compress_ids(ids: tuple[int, ...]) -> str:
    """``0,1,2,5`` -> ``0-2,5``: how squeue writes the pending tasks of an array."""
    parts: list[str] = []
    start = prev = None
    for n in ids:
        if prev is not None and n == prev + 1:
            prev = n
            continue
        if start is not None:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = n
    if start is not None:
        parts.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(parts)


# --- --dependency --------------------------------------------------------------------------

DEPENDENCY_TYPES = ("after", "afterany", "afterok", "afternotok", "aftercorr", "afterburstbuffer")


@dataclass(frozen=True)
class DependencyTarget:
    job_id: int
    task_id: int | None = None
    delay_minutes: int = 0
    """``after:ID+MINUTES``: satisfied that long after the target starts."""

    def __str__(self) -> str:
        s = str(self.job_id) + (f"_{self.task_id}" if self.task_id is not None else "")
        return s + (f"+{self.delay_minutes}" if self.delay_minutes else "")


@dataclass(frozen=True)
class DependencyTerm:
    kind: str
    """One of DEPENDENCY_TYPES, or ``singleton``."""
    targets: tuple[DependencyTarget, ...] = ()

    def __str__(self) -> str:
        return ":".join([self.kind, *(str(t) for t in self.targets)])


@dataclass(frozen=True)
class Dependency:
    terms: tuple[DependencyTerm, ...]
    any_of: bool = False
    """``?`` between terms: any one satisfied term is enough; ``,`` (default): all of them."""

    def __str__(self) -> str:
        return ("?" if self.any_of else ",").join(str(t) for t in self.terms)


def parse_dependency(text: str) -> Dependency:
    """``afterok:12:13,afterany:14``, ``afterok:12?afternotok:13``, ``after:12+5``, ``singleton``,
    array tasks as ``12_3``. A bare ``12`` means ``afterany:12``, as in Slurm."""
    value = text.strip()
    if "," in value and "?" in value:
        raise ValueError(f'invalid dependency "{text}": mix of "," (all) and "?" (any)')
    any_of = "?" in value
    terms: list[DependencyTerm] = []
    for raw in value.split("?" if any_of else ","):
        part = raw.strip()
        if not part:
            raise ValueError(f'invalid dependency "{text}": empty term')
        if part == "singleton":
            terms.append(DependencyTerm("singleton"))
            continue
        kind, colon, rest = part.partition(":")
        if not colon and re.fullmatch(r"\d+(_\d+)?", kind):
            kind, rest = "afterany", kind
        if kind not in DEPENDENCY_TYPES:
            known = ", ".join((*DEPENDENCY_TYPES, "singleton"))
            raise ValueError(f'invalid dependency "{text}": unknown type "{kind}"; use {known}')
        targets = []
        for t in rest.split(":"):
            m = re.fullmatch(r"(\d+)(?:_(\d+))?(?:\+(\d+))?", t.strip())
            if not m:
                raise ValueError(f'invalid dependency "{text}": "{t}" is not a job id')
            if m.group(3) and kind != "after":
                raise ValueError(f'invalid dependency "{text}": "+minutes" is only for after:')
            targets.append(
                DependencyTarget(
                    int(m.group(1)), int(m.group(2)) if m.group(2) else None, int(m.group(3) or 0)
                )
            )
        terms.append(DependencyTerm(kind, tuple(targets)))
    return Dependency(tuple(terms), any_of)


# --- --constraint --------------------------------------------------------------------------

_FEATURE = re.compile(r"[A-Za-z0-9_.-]+")


def parse_constraint(text: str) -> list[list[str]]:
    """A constraint as OR of ANDs (disjunctive normal form): ``a&(b|c)`` -> [[a, b], [a, c]].
    ``&`` and ``|`` (and ``,`` as AND) with parentheses; ``[a|b]`` (one of them for all nodes)
    is read as ``(a|b)``, which is what a node-affinity term can say. Counts (``a*2``) are not
    supported."""
    tokens: list[str] = re.findall(r"[A-Za-z0-9_.-]+|[&|,()\[\]]|\S", text)
    pos = 0

    def peek() -> str:
        return tokens[pos] if pos < len(tokens) else ""

    def take() -> str:
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def expr() -> list[list[str]]:
        terms = conj()
        while peek() == "|":
            take()
            terms = terms + conj()
        return terms

    def conj() -> list[list[str]]:
        terms = atom()
        while peek() in ("&", ","):
            take()
            right = atom()
            terms = [a + b for a in terms for b in right]
        return terms

    def atom() -> list[list[str]]:
        tok = take() if pos < len(tokens) else ""
        if tok in ("(", "["):
            inner = expr()
            close = ")" if tok == "(" else "]"
            if (take() if pos < len(tokens) else "") != close:
                raise ValueError(f'invalid constraint "{text}": missing "{close}"')
            return inner
        if tok and _FEATURE.fullmatch(tok):
            return [[tok]]
        if tok == "*":
            raise ValueError(f'invalid constraint "{text}": feature counts ("*N") are not supported')
        raise ValueError(f'invalid constraint "{text}": unexpected "{tok or "end"}"')

    result = expr()
    if pos != len(tokens):
        bad = tokens[pos]
        if bad == "*":
            raise ValueError(f'invalid constraint "{text}": feature counts ("*N") are not supported')
        raise ValueError(f'invalid constraint "{text}": unexpected "{bad}"')
    return [sorted(set(t)) for t in result]


# --- --gres --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gres:
    name: str
    type: str
    count: int


def parse_gres(text: str) -> list[Gres]:
    """``gpu:2``, ``gpu:v100:4``, ``gpu``, ``gpu:a100:2,mps:50`` (per node)."""
    out = []
    for piece in text.split(","):
        parts = piece.strip().split(":")
        if not parts[0] or len(parts) > 3:
            raise ValueError(f'invalid gres "{text}": use NAME[:TYPE][:COUNT]')
        name, gtype, count = parts[0], "", 1
        if len(parts) == 2:
            if parts[1].isdigit():
                count = int(parts[1])
            else:
                gtype = parts[1]
        elif len(parts) == 3:
            gtype = parts[1]
            if not parts[2].isdigit():
                raise ValueError(f'invalid gres "{text}": count "{parts[2]}" is not a whole number')
            count = int(parts[2])
        out.append(Gres(name, gtype, count))
    return out
