"""``kubehpc up`` without --port while the usual port is taken (say by the control plane of
another home) starts on any free port instead of dying in its log. A named port in use is
refused up front: tests/cli/test_connection.py."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_harness import run_subprocess

from kubehpc.cli import daemon


@pytest.fixture
def default_port_held() -> Iterator[None]:
    """The usual port listened on, by this test or already by another control plane."""
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        holder.bind((daemon.DEFAULT_HOST, daemon.DEFAULT_PORT))
        holder.listen(1)
    except OSError:
        pass  # someone else listens there: held all the same
    try:
        yield
    finally:
        holder.close()


def test_without_a_port_a_taken_default_port_falls_back_to_any_free_one(default_port_held: None) -> None:
    assert daemon.choose_port(daemon.DEFAULT_HOST, None) == 0


def test_up_in_a_second_home_starts_while_the_default_port_is_taken(
    default_port_held: None, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    try:
        started = run_subprocess(home, "up", "-d")
        assert started.code == 0, started.err
        assert f":{daemon.DEFAULT_PORT}" not in started.out
        assert run_subprocess(home, "get", "nodes").code == 0
    finally:
        run_subprocess(home, "down")
