"""Store benchmark of issue 2: 10,000 Pods through the durable store.

Runs the two halves in their own processes, one after the other, so neither warms or loads the
other: ``store_core.py`` (in process: batched durable creates, watch latency) and
``store_http.py`` (one create per HTTPS request against ``python -m kubehpc.server``, watch
latency over an HTTP watch). Each prints its own figures; the last line here combines them:

    writes_per_s_batched=… writes_per_s_http=… watch_p50_ms=… watch_p99_ms=…

The watch figures are the HTTP ones (create request sent -> ADDED event read by a client),
the harder of the two. Targets on a 2-core machine: >= 5,000 batched, >= 1,000 over HTTP,
watch p99 < 50 ms.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(script: str, *args: str) -> dict[str, str]:
    proc = subprocess.run(
        [sys.executable, str(HERE / script), *args], capture_output=True, text=True, check=False
    )
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"{script} failed with exit code {proc.returncode}")
    last = proc.stdout.strip().splitlines()[-1]
    return dict(part.split("=", 1) for part in last.split() if "=" in part)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pods", type=int, default=10_000)
    args = parser.parse_args()
    print("== in process (store_core.py)")
    core = run("store_core.py", "--pods", str(args.pods))
    print("== over HTTPS (store_http.py)")
    http = run("store_http.py", "--pods", str(args.pods))
    print(
        f"writes_per_s_batched={float(core['writes_per_s_batched']):.0f} "
        f"writes_per_s_http={float(http['writes_per_s_http']):.0f} "
        f"watch_p50_ms={float(http['watch_p50_ms']):.1f} watch_p99_ms={float(http['watch_p99_ms']):.1f}"
    )


if __name__ == "__main__":
    main()
