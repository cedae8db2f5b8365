"""`kill -9` of `kubehpc up` in the middle of a stream of HTTP writes loses no write that was
acknowledged, and a watch from a resourceVersion taken before the crash resumes after it."""

from __future__ import annotations

import base64
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
import yaml
from e2ekit import Plane

WRITERS = 4
KILL_AFTER_ACKS = 300


def api_client(plane: Plane, ca_file: Path) -> httpx.Client:
    user = yaml.safe_load(plane.kubeconfig.read_text())["users"][0]["user"]
    return httpx.Client(
        base_url=plane.url,
        headers={"Authorization": f"Bearer {user['token']}"},
        verify=ssl.create_default_context(cafile=str(ca_file)),
        timeout=10,
    )


def ca_file_of(plane: Plane, tmp_path: Path) -> Path:
    cluster = yaml.safe_load(plane.kubeconfig.read_text())["clusters"][0]["cluster"]
    path = tmp_path / "ca.pem"
    path.write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    return path


@pytest.fixture
def plane(tmp_path: Path) -> Iterator[Plane]:
    p = Plane(tmp_path / "home").start(cluster=None)
    try:
        yield p
    finally:
        p.stop()


def test_kill9_mid_stream_loses_no_acknowledged_write(plane: Plane, tmp_path: Path) -> None:
    ca = ca_file_of(plane, tmp_path)
    acked: dict[str, int] = {}  # name -> resourceVersion the server acknowledged
    lock = threading.Lock()
    enough = threading.Event()

    def writer(w: int) -> None:
        with api_client(plane, ca) as http:
            for i in range(100_000):
                name = f"w{w}-{i}"
                body = {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": name},
                    "data": {"i": str(i)},
                }
                try:
                    r = http.post("/api/v1/namespaces/default/configmaps", json=body)
                except httpx.HTTPError:
                    return  # the server is gone: this write was never acknowledged
                if r.status_code != 201:
                    return
                with lock:
                    acked[name] = int(r.json()["metadata"]["resourceVersion"])
                    if len(acked) >= KILL_AFTER_ACKS:
                        enough.set()

    threads = [threading.Thread(target=writer, args=(w,), daemon=True) for w in range(WRITERS)]
    for t in threads:
        t.start()
    assert enough.wait(120), "the writers did not get going"
    plane.kill9()  # with writes from every writer in flight
    for t in threads:
        t.join(30)
    with lock:
        acknowledged = dict(acked)

    plane.start(cluster=None)
    with api_client(plane, ca) as http:
        stored = http.get("/api/v1/namespaces/default/configmaps").json()
    names = {item["metadata"]["name"] for item in stored["items"]}
    missing = sorted(set(acknowledged) - names)
    assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {missing[:5]}"
    assert int(stored["metadata"]["resourceVersion"]) >= max(acknowledged.values())


def test_a_watch_resumes_across_a_restart_from_its_resource_version(plane: Plane, tmp_path: Path) -> None:
    ca = ca_file_of(plane, tmp_path)
    with api_client(plane, ca) as http:

        def create(name: str) -> int:
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
            r = http.post("/api/v1/namespaces/default/configmaps", json=body)
            assert r.status_code == 201, r.text
            return int(r.json()["metadata"]["resourceVersion"])

        create("before")
        resume_from = create("mark")
        later = ["after-1", "after-2", "after-3"]
        for name in later:
            create(name)
    plane.kill9()
    plane.start(cluster=None)

    with (
        api_client(plane, ca) as http,
        http.stream(
            "GET",
            "/api/v1/namespaces/default/configmaps",
            params={"watch": "1", "resourceVersion": str(resume_from), "timeoutSeconds": "3"},
        ) as response,
    ):
        events = [orjson.loads(line) for line in response.iter_lines() if line]
    seen = [(e["type"], e["object"]["metadata"]["name"]) for e in events if e["type"] != "BOOKMARK"]
    assert seen == [("ADDED", name) for name in later]
