"""pods/log: the container's log file under the home, with tailLines and follow."""

from __future__ import annotations

import threading
import time

import httpx
from serverkit import LiveServer, pod

PODS = "/api/v1/namespaces/default/pods"


def write_log(server: LiveServer, text: str, pod_name: str = "a", container: str = "main") -> None:
    path = server.home.pod_log_path("default", pod_name, container)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as out:
        out.write(text)


def test_log_returns_the_file_as_text(server: LiveServer, http: httpx.Client) -> None:
    http.post(PODS, json=pod("a"))
    write_log(server, "one\ntwo\n")
    response = http.get(f"{PODS}/a/log")
    assert response.text == "one\ntwo\n" and response.headers["content-type"].startswith("text/plain")


def test_tail_lines_keeps_the_last_lines(server: LiveServer, http: httpx.Client) -> None:
    http.post(PODS, json=pod("a"))
    write_log(server, "one\ntwo\nthree\n")
    assert http.get(f"{PODS}/a/log", params={"tailLines": 2}).text == "two\nthree\n"


def test_several_containers_need_a_container_name(server: LiveServer, http: httpx.Client) -> None:
    obj = pod("a")
    obj["spec"]["containers"].append({"name": "side", "image": "busybox"})
    http.post(PODS, json=obj)
    response = http.get(f"{PODS}/a/log")
    assert response.status_code == 400 and "choose one of: [main side]" in response.json()["message"]
    write_log(server, "from side\n", container="side")
    assert http.get(f"{PODS}/a/log", params={"container": "side"}).text == "from side\n"


def test_unknown_container_is_a_400(http: httpx.Client) -> None:
    http.post(PODS, json=pod("a"))
    assert http.get(f"{PODS}/a/log", params={"container": "nope"}).status_code == 400


def test_log_of_a_missing_pod_is_a_404(http: httpx.Client) -> None:
    assert http.get(f"{PODS}/ghost/log").status_code == 404


def test_follow_streams_new_lines_until_the_pod_is_deleted(server: LiveServer, http: httpx.Client) -> None:
    http.post(PODS, json=pod("a"))
    write_log(server, "first\n")

    def later() -> None:
        time.sleep(0.5)
        write_log(server, "second\n")
        time.sleep(0.5)
        with server.client() as other:
            other.delete(f"{PODS}/a")

    threading.Thread(target=later, daemon=True).start()
    with http.stream("GET", f"{PODS}/a/log", params={"follow": "true"}) as response:
        text = b"".join(response.iter_bytes()).decode()
    assert text == "first\nsecond\n"


def test_follow_of_a_finished_pod_returns_at_once(server: LiveServer, http: httpx.Client) -> None:
    created = http.post(PODS, json=pod("a")).json()
    created["status"] = {"phase": "Succeeded"}
    http.put(f"{PODS}/a/status", json=created)
    write_log(server, "done\n")
    assert http.get(f"{PODS}/a/log", params={"follow": "true"}).text == "done\n"
