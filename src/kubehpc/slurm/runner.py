"""Inside the pod: the fixed bash program that runs a batch script, and output file names.

The runner's text never changes with the job: names, patterns, paths and arguments reach it
through the environment and ``"$@"``, and it never evaluates them, so shell metacharacters in
them stay characters. It

1. works out the per-pod values: for an array task, SLURM_ARRAY_TASK_ID from the completion
   index (``KUBEHPC_SLURM_ARRAY_TASKS`` lists ``first:count:step`` runs) and SLURM_JOB_ID as
   Slurm numbers tasks (the last task keeps the array's id, task i < last gets id + i + 1);
   for a multi-node job, SLURM_NODEID = the index; SLURM_TASK_PID is the script's pid (the
   runner ``exec``s it), SLURM_JOB_UID/GID the user it runs as; SLURM_JOB_GPUS the node's
   indices of the pod's GPUs (``KUBEHPC_GPU_INDICES``, which the node's device plugin sets;
   else CUDA_VISIBLE_DEVICES when it holds indices, as on a real cluster's nodes);
2. on every pod but the first of a multi-node job, waits (``sleep infinity``) for ``srun``
   (the srun shim and launch agent come with the MPI work) until the Job's success policy ends
   the pod once pod 0's script is done;
3. on pod 0, expands the ``-o``/``-e``/``-i`` patterns (``%j %J %A %a %x %u %N %n %t %s %b %%``,
   with zero padding as ``%4j``; a name containing ``\\`` is taken literally, without the
   backslashes) relative to the working directory (the submit directory, or ``-D``), opens
   them as sbatch does (truncate, or append with ``--open-mode=append``; stdin from /dev/null),
   says where the output goes in the pod log, and execs the script (by its ``#!`` line).

:func:`expand_pattern` is the same expansion in Python; tests check the two agree.
"""

from __future__ import annotations

from collections.abc import Mapping

NO_ARRAY_TASK = "4294967294"  # what Slurm puts for %a outside an array (NO_VAL)
SCRIPT_KEY = "script"
RUNNER_KEY = "run"

RUNNER = r"""#!/bin/bash
# kubehpc: runs a Slurm batch script in a pod (fixed text; job values come from the environment).
kubehpc_nth_task() {
  local k=$2 piece first count step
  for piece in ${1//,/ }; do
    IFS=: read -r first count step <<<"$piece"
    if [ "$k" -lt "$count" ]; then echo $((first + k * step)); return 0; fi
    k=$((k - count))
  done
  return 1
}
kubehpc_expand() {
  local p=$1 out="" c w v i=0 n=${#1}
  case $p in *\\*) printf '%s' "${p//\\/}"; return;; esac
  while [ "$i" -lt "$n" ]; do
    c=${p:i:1}; i=$((i + 1))
    if [ "$c" != "%" ]; then out+=$c; continue; fi
    w=""
    while [ "$i" -lt "$n" ] && [[ ${p:i:1} == [0-9] ]]; do w+=${p:i:1}; i=$((i + 1)); done
    c=${p:i:1}; i=$((i + 1))
    case $c in
      %) out+="%"; continue;;
      j|J) v=$SLURM_JOB_ID;;
      A) v=${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID};;
      a) v=${SLURM_ARRAY_TASK_ID:-4294967294};;
      b) v=$(( ${SLURM_ARRAY_TASK_ID:-0} % 10 ));;
      x) v=$SLURM_JOB_NAME;;
      u) v=$SLURM_JOB_USER;;
      N) v=${SLURMD_NODENAME%%.*};;
      n) v=$SLURM_NODEID;;
      t) v=0;;
      s) v=batch;;
      *) out+="%$w$c"; continue;;
    esac
    if [ -n "$w" ] && [[ $v =~ ^[0-9]+$ ]]; then v=$(printf "%0${w}d" "$((10#$v))"); fi
    out+=$v
  done
  printf '%s' "$out"
}
idx=${JOB_COMPLETION_INDEX:-0}
node=${HOSTNAME:-$(hostname)}
if [ -n "${KUBEHPC_SLURM_ARRAY_TASKS:-}" ]; then
  SLURM_ARRAY_TASK_ID=$(kubehpc_nth_task "$KUBEHPC_SLURM_ARRAY_TASKS" "$idx") || {
    echo "kubehpc: no array task for index $idx" >&2; exit 1; }
  export SLURM_ARRAY_TASK_ID
  # As Slurm numbers array tasks: the last task keeps the array's id, the others follow it.
  if [ "$idx" -eq $((SLURM_ARRAY_TASK_COUNT - 1)) ]; then
    export SLURM_JOB_ID=$SLURM_ARRAY_JOB_ID
  else
    export SLURM_JOB_ID=$((SLURM_ARRAY_JOB_ID + idx + 1))
  fi
  export SLURM_JOBID=$SLURM_JOB_ID SLURM_JOB_NODELIST=$node SLURM_NODELIST=$node
  export SLURM_NODEID=0
else
  export SLURM_NODEID=$idx
fi
export SLURMD_NODENAME=$node SLURM_TOPOLOGY_ADDR=$node SLURM_TOPOLOGY_ADDR_PATTERN=node
export SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_PRIO_PROCESS=0
export SLURM_JOB_UID=$(id -u) SLURM_JOB_GID=$(id -g) SLURM_TASK_PID=$$
if [ -n "${SLURM_GPUS_ON_NODE:-}" ] && [[ ${KUBEHPC_GPU_INDICES:-} =~ ^[0-9]+(,[0-9]+)*$ ]]; then
  export SLURM_JOB_GPUS=$KUBEHPC_GPU_INDICES
elif [ -n "${SLURM_GPUS_ON_NODE:-}" ] && [[ ${CUDA_VISIBLE_DEVICES:-} =~ ^[0-9]+(,[0-9]+)*$ ]]; then
  export SLURM_JOB_GPUS=$CUDA_VISIBLE_DEVICES
fi
export SLURM_JOB_START_TIME=$(date +%s)
if [ -n "${KUBEHPC_SLURM_TIME_LIMIT_S:-}" ]; then
  export SLURM_JOB_END_TIME=$((SLURM_JOB_START_TIME + KUBEHPC_SLURM_TIME_LIMIT_S))
fi
if [ "$SLURM_NODEID" != 0 ]; then
  exec sleep infinity
fi
dir=${KUBEHPC_MOUNT_SLURM_SCRIPT:-/kubehpc/slurm}
out=$(kubehpc_expand "$KUBEHPC_SLURM_OUTPUT")
err=""
if [ -n "${KUBEHPC_SLURM_ERROR:-}" ]; then err=$(kubehpc_expand "$KUBEHPC_SLURM_ERROR"); fi
for f in "$out" ${err:+"$err"}; do
  if ! ( : >>"$f" ) 2>/dev/null; then
    echo "kubehpc: Slurm job $SLURM_JOB_ID: cannot open output file $PWD/$f" >&2
    exit 1
  fi
done
echo "kubehpc: Slurm job $SLURM_JOB_ID runs in $PWD; output in $out${err:+, errors in $err}"
in=/dev/null
if [ -n "${KUBEHPC_SLURM_INPUT:-}" ]; then in=$(kubehpc_expand "$KUBEHPC_SLURM_INPUT"); fi
if [ "${KUBEHPC_SLURM_OPEN_MODE:-truncate}" = append ]; then exec >>"$out"; else exec >"$out"; fi
if [ -z "$err" ] || [ "$err" = "$out" ]; then
  exec 2>&1
elif [ "${KUBEHPC_SLURM_OPEN_MODE:-truncate}" = append ]; then
  exec 2>>"$err"
else
  exec 2>"$err"
fi
exec <"$in"
export ENVIRONMENT=BATCH
script=$dir/script
if [ -x "$script" ]; then exec "$script" "$@"; fi
exec /bin/bash "$script" "$@"
"""


def expand_pattern(pattern: str, values: Mapping[str, str]) -> str:
    """An sbatch file name pattern with ``values`` keyed by the letter (``j``, ``A``, ``a``,
    ``x``, ``u``, ``N``, ``n``); what the runner does in bash."""
    if "\\" in pattern:
        return pattern.replace("\\", "")
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        i += 1
        if ch != "%":
            out.append(ch)
            continue
        width = ""
        while i < n and pattern[i].isdigit():
            width += pattern[i]
            i += 1
        letter = pattern[i] if i < n else ""
        i += 1
        if letter == "%":
            out.append("%")
            continue
        value = _letter(letter, values)
        if value is None:
            out.append(f"%{width}{letter}")
            continue
        if width and value.isdigit():
            value = value.zfill(int(width))
        out.append(value)
    return "".join(out)


def _letter(letter: str, v: Mapping[str, str]) -> str | None:
    job = v.get("j", "")
    table = {
        "j": job,
        "J": job,
        "A": v.get("A") or job,
        "a": v.get("a") or NO_ARRAY_TASK,
        "b": str(int(v.get("a") or 0) % 10),
        "x": v.get("x", ""),
        "u": v.get("u", ""),
        "N": v.get("N", "").split(".")[0],
        "n": v.get("n", "0"),
        "t": "0",
        "s": "batch",
    }
    return table.get(letter)


def array_runs(ids: tuple[int, ...]) -> str:
    """Sorted task ids as ``first:count:step`` runs, for the runner's index -> task id lookup."""
    runs: list[tuple[int, int, int]] = []
    i = 0
    while i < len(ids):
        first = ids[i]
        if i + 1 < len(ids):
            step = ids[i + 1] - first
            count = 2
            while i + count < len(ids) and ids[i + count] - ids[i + count - 1] == step:
                count += 1
            runs.append((first, count, step))
            i += count
        else:
            runs.append((first, 1, 1))
            i += 1
    return ",".join(f"{a}:{b}:{c}" for a, b, c in runs)
