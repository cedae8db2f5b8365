"""Running a container as a host process: exit codes, logs, limits, stopping, adoption."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from kubehpc.node.runner import CpuPool, LaunchSpec, Runner, StartError, container_pids

PATH = {"PATH": os.environ.get("PATH", os.defpath)}


def spec(tmp_path: Path, cid: str, argv: list[str], **kw) -> LaunchSpec:
    return LaunchSpec(
        cid, argv, dict(PATH), tmp_path, tmp_path / "logs" / f"{cid.replace('/', '_')}.log", **kw
    )


@pytest.fixture
def runner(tmp_path):
    return Runner(tmp_path / "state", CpuPool())


def gone(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists()


def wait_for(pred, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def test_exit_zero_is_completed(runner, tmp_path):
    ex = runner.wait(runner.start(spec(tmp_path, "u/a", ["true"])), 10)
    assert (ex.exit_code, ex.reason) == (0, "Completed")


def test_a_nonzero_exit_is_an_error_with_its_code(runner, tmp_path):
    ex = runner.wait(runner.start(spec(tmp_path, "u/a", ["sh", "-c", "exit 3"])), 10)
    assert (ex.exit_code, ex.reason) == (3, "Error")


def test_death_by_signal_reads_as_128_plus_the_signal(runner, tmp_path):
    ex = runner.wait(runner.start(spec(tmp_path, "u/a", ["sh", "-c", "kill -9 $$"])), 10)
    assert ex.exit_code == 137


def test_stdout_and_stderr_go_to_the_log(runner, tmp_path):
    s = spec(tmp_path, "u/a", ["sh", "-c", "echo out; echo err >&2"])
    runner.wait(runner.start(s), 10)
    assert s.log_path.read_text().splitlines() == ["out", "err"]


def test_a_restart_keeps_the_previous_log(runner, tmp_path):
    s = spec(tmp_path, "u/a", ["sh", "-c", "echo run"])
    runner.wait(runner.start(s), 10)
    runner.wait(runner.start(s), 10)
    assert s.log_path.with_name(s.log_path.stem + ".previous.log").read_text() == "run\n"


def test_a_missing_command_fails_with_the_os_message_in_the_log(runner, tmp_path):
    s = spec(tmp_path, "u/a", ["app", "--flag"])
    with pytest.raises(StartError) as exc:
        runner.start(s)
    assert exc.value.message == 'exec: "app": executable file not found in $PATH'
    assert s.log_path.read_text() == 'exec: "app": executable file not found in $PATH\n'


def test_no_command_at_all_is_an_error(runner, tmp_path):
    with pytest.raises(StartError, match="no command given"):
        runner.start(spec(tmp_path, "u/a", []))


def test_the_process_runs_in_its_own_session(runner, tmp_path):
    proc = runner.start(spec(tmp_path, "u/a", ["sleep", "30"]))
    try:
        assert os.getsid(proc.pid) == proc.pid and os.getpgid(proc.pid) == proc.pid
    finally:
        runner.stop(proc, 0)


def test_graceful_stop_lets_the_program_handle_sigterm(runner, tmp_path):
    script = "trap 'echo bye; exit 0' TERM; while true; do sleep 0.05; done"
    s = spec(tmp_path, "u/a", ["sh", "-c", script])
    proc = runner.start(s)
    time.sleep(0.2)
    ex = runner.stop(proc, 5)
    assert ex.exit_code == 0 and "bye" in s.log_path.read_text()


def test_stop_kills_the_whole_process_tree_even_children_that_left_the_group(runner, tmp_path):
    script = "sleep 60 & setsid sleep 61 & wait"
    proc = runner.start(spec(tmp_path, "u/tree", ["sh", "-c", script]))
    wait_for(lambda: len(container_pids("u/tree")) >= 4)  # shim, sh, sleep, setsid sleep
    pids = container_pids("u/tree")
    runner.stop(proc, 2)
    wait_for(lambda: all(gone(p) or Path(f"/proc/{p}/stat").read_text().split()[2] == "Z" for p in pids))
    assert container_pids("u/tree") == []


def test_sigkill_follows_when_sigterm_is_ignored_past_the_grace_period(runner, tmp_path):
    proc = runner.start(spec(tmp_path, "u/a", ["sh", "-c", "trap '' TERM; while true; do sleep 0.05; done"]))
    time.sleep(0.2)
    ex = runner.stop(proc, 0.3)
    assert ex.exit_code == 137


def test_what_a_finished_main_process_leaves_in_its_group_is_killed(runner, tmp_path):
    runner.wait(runner.start(spec(tmp_path, "u/bg", ["sh", "-c", "sleep 60 & exit 0"])), 10)
    wait_for(lambda: container_pids("u/bg") == [])


def test_a_sweep_kills_what_left_the_group_of_a_finished_container(runner, tmp_path):
    runner.wait(runner.start(spec(tmp_path, "u/bg", ["sh", "-c", "setsid sleep 60 & sleep 0.2; exit 0"])), 10)
    assert container_pids("u/bg")
    assert runner.sweep()
    wait_for(lambda: container_pids("u/bg") == [])


def test_the_main_process_is_reaped(runner, tmp_path):
    proc = runner.start(spec(tmp_path, "u/a", ["true"]))
    runner.wait(proc, 10)
    assert gone(proc.pid)


def test_a_cpu_limit_pins_the_process_to_that_many_cpus(runner, tmp_path):
    proc = runner.start(spec(tmp_path, "u/a", ["sleep", "30"], cpu_millis=500))
    try:
        assert len(os.sched_getaffinity(proc.pid)) == 1
    finally:
        runner.stop(proc, 0)


def test_a_memory_limit_makes_larger_allocations_fail(runner, tmp_path):
    code = "b = bytearray(512 * 1024 * 1024); print('allocated')"
    s = spec(tmp_path, "u/a", [sys.executable, "-c", code], memory_bytes=256 * 1024 * 1024)
    ex = runner.wait(runner.start(s), 30)
    assert ex.exit_code != 0 and "MemoryError" in s.log_path.read_text()


def test_a_new_runner_adopts_a_running_process_instead_of_starting_it_again(tmp_path):
    marker = tmp_path / "starts"
    first = Runner(tmp_path / "state", CpuPool())
    proc = first.start(spec(tmp_path, "u/a", ["sh", "-c", f"echo start >> {marker}; sleep 0.6; exit 4"]))
    second = Runner(tmp_path / "state", CpuPool())  # the agent restarted
    [(adopted, ex)] = second.adopt()
    assert ex is None and adopted.pid == proc.pid
    done = second.wait(adopted, 10)
    assert done.exit_code == 4  # read from the shim's exit file: not our child any more
    assert marker.read_text() == "start\n"
    wait_for(lambda: gone(proc.pid))


def test_a_process_that_ended_while_the_agent_was_down_reports_its_exit(tmp_path):
    first = Runner(tmp_path / "state", CpuPool())
    proc = first.start(spec(tmp_path, "u/a", ["sh", "-c", "exit 2"]))
    wait_for(lambda: Path(proc.exit_path).exists())
    [(_, ex)] = Runner(tmp_path / "state", CpuPool()).adopt()
    assert ex is not None and ex.exit_code == 2


def test_a_recycled_pid_is_not_mistaken_for_the_container(tmp_path):
    first = Runner(tmp_path / "state", CpuPool())
    proc = first.start(spec(tmp_path, "u/a", ["sleep", "30"]))
    try:
        record = first.state_dir / "u_a.json"
        record.write_text(
            record.read_text().replace(f'"start_ticks": {proc.start_ticks}', '"start_ticks": 1')
        )
        [(_, ex)] = Runner(tmp_path / "state", CpuPool()).adopt()
        assert ex is not None and ex.reason == "ContainerStatusUnknown"
    finally:
        first.stop(proc, 0)


def test_forget_removes_the_record(runner, tmp_path):
    proc = runner.start(spec(tmp_path, "u/a", ["true"]))
    runner.wait(proc, 10)
    runner.forget(proc)
    assert runner.records() == []
