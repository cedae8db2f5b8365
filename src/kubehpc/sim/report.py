"""What a replay leaves behind: a per-job CSV, PNG plots, and a one-page HTML comparison.

The HTML report puts several policies replayed on the same trace side by side: a table of the
summary figures (one column per policy), then utilisation and queue length over time, the wait
distribution and the per-user fairness, each as one plot with a line per policy.
"""

from __future__ import annotations

import csv
import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kubehpc.sim.engine import SimResult
from kubehpc.sim.metrics import bounded_slowdowns, summary, waits
from kubehpc.sim.traces.common import FloatArray

BINS = 400


def write_jobs_csv(result: SimResult, path: Path) -> None:
    t = result.trace
    w = waits(result)
    b = bounded_slowdowns(result)
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(
            [
                "id",
                "user",
                "queue",
                "priority",
                "submit_s",
                "start_s",
                "end_s",
                "wait_s",
                "response_s",
                "run_s",
                "estimate_s",
                "bsld",
                "backfilled",
                "predicted_start_s",
                *t.resources,
                *(("nodes", "domains") if result.job_nodes is not None else ()),
            ]
        )
        users, queues = t.user_names, t.queue_names
        for i in range(len(t)):
            u, q = int(t.users[i]), int(t.queues[i])
            predicted = result.predicted_start[i]
            out.writerow(
                [
                    int(t.ids[i]),
                    users[u] if 0 <= u < len(users) else "unknown",
                    queues[q] if 0 <= q < len(queues) else "unknown",
                    int(t.priority[i]),
                    _num(t.submit[i]),
                    _num(result.start[i]),
                    _num(result.start[i] + result.run[i]),
                    _num(w[i]),
                    _num(w[i] + result.run[i]),
                    _num(result.run[i]),
                    _num(result.estimate[i]),
                    f"{b[i]:.4f}",
                    int(result.backfilled[i]),
                    "" if np.isnan(predicted) else _num(predicted),
                    *(int(x) for x in t.sizes[i]),
                    *_placement_columns(result, i),
                ]
            )


def _placement_columns(result: SimResult, i: int) -> tuple[int | str, ...]:
    """Node-level replay only: how many nodes the job ran on, and its pod sets' domains."""
    if result.job_nodes is None:
        return ()
    return int(result.job_nodes[i]), result.job_domains[i] if result.job_domains else ""


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.3f}"


def binned(
    times: FloatArray, values: FloatArray, start: float, end: float, bins: int = BINS
) -> tuple[FloatArray, FloatArray]:
    """Time-weighted mean of a step function (``values[k]`` on ``[times[k], times[k+1])``) per bin."""
    edges = np.linspace(start, end, bins + 1)
    if len(times) == 0 or end <= start:
        return edges[:-1], np.zeros(bins)
    area = np.concatenate([[0.0], np.cumsum(values[:-1] * np.diff(times))])
    at_edges = np.interp(edges, times, area, left=0.0, right=float(area[-1]))
    return edges[:-1], np.diff(at_edges) / np.diff(edges)


def _series(result: SimResult) -> dict[str, tuple[FloatArray, FloatArray]]:
    t = result.event_times
    if len(t) == 0:
        return {}
    start, end = float(t[0]), float(t[-1])
    cap = float(result.capacity[0]) if len(result.capacity) else 1.0
    used = result.event_used[:, 0] / cap if result.event_used.shape[1] else np.zeros(len(t))
    x, util = binned(t, used.astype(np.float64), start, end)
    _, queue = binned(t, result.event_queue.astype(np.float64), start, end)
    days = (x - start) / 86400.0
    return {"utilization": (days, util), "queue": (days, queue)}


def plot(results: Sequence[SimResult], out_dir: Path) -> list[str]:
    """PNG plots comparing the results; returns the file names written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names: list[str] = []

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        fig.savefig(out_dir / name, dpi=100)
        plt.close(fig)
        names.append(name)

    series = [(_label(r), _series(r)) for r in results]
    for key, title, ylabel in (
        ("utilization", "Utilisation over time", f"fraction of {results[0].trace.resources[0]} in use"),
        ("queue", "Queue length over time", "waiting jobs"),
    ):
        fig, ax = plt.subplots(figsize=(9, 3.2))
        for label, s in series:
            if key in s:
                ax.plot(*s[key], label=label, linewidth=0.9)
        ax.set_title(title)
        ax.set_xlabel("days since first submit")
        ax.set_ylabel(ylabel)
        ax.legend()
        save(fig, f"{key}.png")

    fig, ax = plt.subplots(figsize=(9, 3.2))
    for r in results:
        w = np.sort(waits(r))
        if len(w):
            ax.plot(np.maximum(w, 1.0), np.arange(1, len(w) + 1) / len(w), label=_label(r))
    ax.set_xscale("log")
    ax.set_title("Wait time distribution (waits under 1 s drawn at 1 s)")
    ax.set_xlabel("wait (s)")
    ax.set_ylabel("fraction of jobs")
    ax.legend()
    save(fig, "wait_cdf.png")

    fig, ax = plt.subplots(figsize=(9, 3.2))
    for r in results:
        groups = summary_groups(r)
        if groups:
            values = np.sort(np.array([g["avg_bsld"] for g in groups.values()]))[::-1]
            ax.plot(np.arange(1, len(values) + 1), values, marker=".", label=_label(r))
    ax.set_yscale("log")
    ax.set_title("Mean bounded slowdown per user, worst first")
    ax.set_xlabel("user rank")
    ax.set_ylabel("mean bounded slowdown")
    ax.legend()
    save(fig, "fairness_users.png")
    return names


def summary_groups(result: SimResult) -> dict[str, dict[str, float]]:
    users = summary(result).get("users")
    return users["groups"] if users else {}


def _label(result: SimResult) -> str:
    o = result.options
    label = str(o.policy)
    if result.job_nodes is not None:
        label += " on nodes"
    if str(o.estimate) != "requested":
        label += f" ({o.estimate})"
    return label


ROWS: tuple[tuple[str, str, str], ...] = (
    ("jobs", "jobs replayed", "{:,.0f}"),
    ("skipped", "jobs skipped", "{:,.0f}"),
    ("avg_wait_s", "mean wait (s)", "{:,.1f}"),
    ("wait_s.median", "median wait (s)", "{:,.1f}"),
    ("wait_s.p95", "p95 wait (s)", "{:,.1f}"),
    ("max_wait_s", "max wait (s)", "{:,.0f}"),
    ("avg_bsld", "mean bounded slowdown", "{:,.2f}"),
    ("bsld.p95", "p95 bounded slowdown", "{:,.2f}"),
    ("response_s.mean", "mean response (s)", "{:,.1f}"),
    ("utilization", "utilisation", "{:.4f}"),
    ("makespan_s", "makespan (s)", "{:,.0f}"),
    ("backfilled_jobs", "jobs started by backfill", "{:,.0f}"),
    ("max_queue_length", "max queue length", "{:,.0f}"),
    ("users.jain_bsld", "fairness over users (Jain, bsld)", "{:.3f}"),
    ("queues.jain_bsld", "fairness over queues (Jain, bsld)", "{:.3f}"),
    ("start_estimates.median_abs_error_s", "start estimate, median abs. error (s)", "{:,.0f}"),
    ("start_estimates.late_fraction", "start estimate, fraction started later", "{:.3f}"),
    ("sim_seconds", "simulation time (s)", "{:.2f}"),
    ("jobs_per_s", "simulated jobs/s", "{:,.0f}"),
)


def _lookup(data: dict[str, Any], dotted: str) -> Any:
    value: Any = data
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _cell(value: Any, fmt: str) -> str:
    if value is None:
        return "-"
    return fmt.format(value)


def write_report(results: Sequence[SimResult], out_dir: str | Path, command: str = "") -> Path:
    """``index.html`` + ``summary.json`` + one ``jobs-<label>.csv`` per run + the plots."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summaries = [summary(r) for r in results]
    for r in results:
        write_jobs_csv(r, out / f"jobs-{_label(r).replace(' ', '_').replace('(', '').replace(')', '')}.csv")
    (out / "summary.json").write_text(json.dumps({"runs": summaries}, indent=2))
    images = plot(results, out) if results else []
    first = summaries[0] if summaries else {}
    head = "".join(f"<th>{html.escape(_label(r))}</th>" for r in results)
    body = "".join(
        f"<tr><td>{html.escape(label)}</td>"
        + "".join(f"<td>{_cell(_lookup(s, key), fmt)}</td>" for s in summaries)
        + "</tr>"
        for key, label, fmt in ROWS
    )
    skipped = first.get("skipped_by_reason") or {}
    adjusted = first.get("adjusted_by_reason") or {}
    notes = "".join(f"<li>skipped: {html.escape(k)}: {v:,}</li>" for k, v in skipped.items())
    notes += "".join(f"<li>adjusted: {html.escape(k)}: {v:,}</li>" for k, v in adjusted.items())
    resources = ", ".join(f"{k} = {v:,}" for k, v in (first.get("resources") or {}).items())
    figures = "".join(f'<figure><img src="{name}" alt="{name}"></figure>' for name in images)
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>kubehpc sim: {html.escape(str(first.get("trace", "")))}</title>
<style>
body {{ font-family: sans-serif; max-width: 960px; margin: 1em auto; color: #222; }}
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #ccc; padding: 2px 8px; }}
td:not(:first-child) {{ text-align: right; font-variant-numeric: tabular-nums; }}
figure {{ margin: 0.5em 0; }} img {{ max-width: 100%; }} code {{ background: #f4f4f4; }}
</style></head><body>
<h1>Trace {html.escape(str(first.get("trace", "")))}: policies side by side</h1>
<p>Pool: {html.escape(resources)}. Records read: {first.get("records", 0):,}.
Estimates: {html.escape(str(first.get("estimate", "")))}; jobs over their requested time
{"are killed" if first.get("kill_at_limit") else "are not killed"}.
{f"Command: <code>{html.escape(command)}</code>" if command else ""}</p>
<table><tr><th>metric</th>{head}</tr>{body}</table>
<ul>{notes}</ul>
<p>Bounded slowdown: max(1, (wait + run) / max(run, 10 s)). Fairness: Jain's index over per-user
(per-queue) mean bounded slowdown, 1 = all alike. Definitions of the policies: docs/simulator.md.</p>
{figures}
</body></html>
"""
    index = out / "index.html"
    index.write_text(page)
    return index
