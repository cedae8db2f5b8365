"""``kubehpc up --event-ttl DURATION``: how long the control plane keeps an Event after its last
write, as kube-apiserver's flag of that name (one hour by default)."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_harness import run_subprocess

from kubehpc.api.errors import NotFound
from kubehpc.cli.daemon import local_client
from kubehpc.cli.main import main
from kubehpc.store.home import Home


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Home]:
    home = Home(tmp_path / "home")
    yield home
    run_subprocess(home.root, "down")


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("soon", '--event-ttl: invalid duration "soon"'),
        ("0s", '--event-ttl: "0s" must be more than zero'),
    ],
)
def test_a_bad_event_ttl_stops_up_before_it_starts(tmp_path: Path, given: str, said: str) -> None:
    err = io.StringIO()
    argv = ["--home", str(tmp_path / "home"), "up", "-d", "--event-ttl", given]
    assert main(argv, stdout=io.StringIO(), stderr=err) == 1
    assert said in err.getvalue()
    assert not (tmp_path / "home" / "kubeconfig").exists()


def test_events_older_than_the_event_ttl_are_deleted(home: Home) -> None:
    started = run_subprocess(home.root, "up", "-d", "--port", "0", "--event-ttl", "1s")
    assert started.code == 0, started.err
    client = local_client(home)
    assert client is not None
    with client:
        client.create(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": "e", "namespace": "default"},
                "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
                "reason": "Tested",
                "message": "short-lived",
                "type": "Normal",
            }
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                client.get("v1", "Event", "e", "default")
            except NotFound:
                return
            time.sleep(0.1)
    raise AssertionError("the Event outlived --event-ttl 1s by 20 s")
