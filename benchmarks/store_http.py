"""Durable creates of Pods one by one over HTTP(S), and watch delivery latency at that rate.

Starts ``python -m kubehpc.server`` (the real server: TLS, bearer token, SQLite store) on a
fresh home, then:

* ``--connections`` keep-alive client connections (default 4) each POST Pods one at a time
  (a request is sent only after the previous answer on that connection): 10,000 in total;
* one ``?watch=1`` stream on the namespace receives the events; a Pod's delivery latency is
  the time from sending its create request to reading its ADDED event (so it includes the
  write itself);
* the server's peak RSS (VmHWM) at the end.

The client is a small asyncio HTTP/1.1 client (keep-alive, Content-Length and chunked
bodies) so that on a 2-core machine the figures measure the server, not the client library.
The last line is ``name=value`` pairs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
import yaml

NAMESPACE = "default"


class Connection:
    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, token: str
    ) -> None:
        self.reader, self.writer = reader, writer
        self.prefix = f"Host: {host}\r\nAuthorization: Bearer {token}\r\nAccept: application/json\r\n"

    @classmethod
    async def open(cls, host: str, port: int, token: str, ctx: ssl.SSLContext | None) -> Connection:
        reader, writer = await asyncio.open_connection(host, port, ssl=ctx, limit=1 << 20)
        return cls(reader, writer, f"{host}:{port}", token)

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        head = (
            f"{method} {path} HTTP/1.1\r\n{self.prefix}Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        status, headers = await self._head()
        length = int(headers.get("content-length", "0"))
        return status, await self.reader.readexactly(length)

    async def _head(self) -> tuple[int, dict[str, str]]:
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            if line:
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
        return status, headers

    async def stream(self, path: str):
        self.writer.write(f"GET {path} HTTP/1.1\r\n{self.prefix}\r\n".encode())
        status, headers = await self._head()
        assert status == 200 and headers.get("transfer-encoding") == "chunked", (status, headers)
        buffer = b""
        while True:
            size = int((await self.reader.readuntil(b"\r\n"))[:-2], 16)
            if size == 0:
                return
            buffer += await self.reader.readexactly(size)
            await self.reader.readexactly(2)
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                yield line


def pod(name: str) -> bytes:
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "bench", "batch": name[-1]}},
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox:1.36",
                        "command": ["sleep", "3600"],
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                    }
                ],
                "restartPolicy": "Never",
            },
        }
    )


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def run(url: str, token: str, ca: Path | None, count: int, connections: int) -> dict[str, float]:
    scheme, _, rest = url.partition("://")
    host, _, port = rest.partition(":")
    ctx = None
    if scheme == "https":
        ctx = ssl.create_default_context(cafile=str(ca))
    sent: dict[str, float] = {}
    latencies: list[float] = []
    watch_conn = await Connection.open(host, int(port), token, ctx)
    _, body = await watch_conn.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?limit=1")
    rv = orjson.loads(body)["metadata"]["resourceVersion"]
    done = asyncio.Event()

    async def watcher() -> None:
        path = f"/api/v1/namespaces/{NAMESPACE}/pods?watch=1&resourceVersion={rv}&timeoutSeconds=600"
        async for line in watch_conn.stream(path):
            now = time.perf_counter()
            event = orjson.loads(line)
            name = event["object"]["metadata"]["name"]
            if event["type"] == "ADDED" and name in sent:
                latencies.append(now - sent[name])
                if len(latencies) == count:
                    done.set()
                    return

    watch_task = asyncio.create_task(watcher())
    await asyncio.sleep(0.2)
    conns = [await Connection.open(host, int(port), token, ctx) for _ in range(connections)]
    bodies = [pod(f"bench-{i:05d}") for i in range(count)]
    path = f"/api/v1/namespaces/{NAMESPACE}/pods?fieldValidation=Strict"
    next_index = 0

    async def writer(conn: Connection) -> None:
        nonlocal next_index
        while next_index < count:
            i = next_index
            next_index += 1
            sent[f"bench-{i:05d}"] = time.perf_counter()
            status, answer = await conn.request("POST", path, bodies[i])
            if status != 201:
                raise SystemExit(f"create {i} failed: {status} {answer[:300]!r}")

    start = time.perf_counter()
    await asyncio.gather(*(writer(c) for c in conns))
    elapsed = time.perf_counter() - start
    await asyncio.wait_for(done.wait(), 60)
    watch_task.cancel()
    latencies.sort()
    return {
        "writes_per_s_http": count / elapsed,
        "watch_p50_ms": statistics.median(latencies) * 1000,
        "watch_p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000,
        "watch_events": len(latencies),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--insecure-http", action="store_true", help="plain http instead of TLS")
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="kubehpc-bench-"))
    cmd = [sys.executable, "-m", "kubehpc.server", "--home", str(home)]
    if args.insecure_http:
        cmd.append("--insecure-http")
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        kubeconfig = home / "kubeconfig"
        deadline = time.monotonic() + 30
        while not kubeconfig.exists():
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("the server did not start")
            time.sleep(0.05)
        config = yaml.safe_load(kubeconfig.read_text())
        url = config["clusters"][0]["cluster"]["server"]
        token = config["users"][0]["user"]["token"]
        ca = home / "pki" / "ca.crt"
        cpu_before = cpu_seconds(server.pid)
        results = asyncio.run(run(url, token, ca, args.pods, args.connections))
        results["server_cpu_us_per_write"] = (cpu_seconds(server.pid) - cpu_before) / args.pods * 1e6
        results["server_peak_rss_mb"] = peak_rss_mb(server.pid)
        results["connections"] = args.connections
        results["pods"] = args.pods
        print(
            f"{args.pods} Pods created one by one over {url.split(':')[0]} on {args.connections} keep-alive "
            f"connections, SQLite store at {home}; watch latency = request sent -> ADDED event read"
        )
        print(" ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in results.items()))
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(home, ignore_errors=True)
        os.sync()


if __name__ == "__main__":
    main()
