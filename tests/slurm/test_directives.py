"""How #SBATCH lines are read: where reading stops, several options per line, comments,
quoting, the command line overriding the script, and errors that name the line."""

from __future__ import annotations

import pytest
from slurmkit import request, script

from kubehpc.slurm.request import SbatchError


def test_directives_are_read_until_the_first_command() -> None:
    text = "#!/bin/bash\n#SBATCH -J first\n\n# a comment\necho hi\n#SBATCH -J late\n"
    req = request(text)
    assert req.name == "first"
    assert any("line 6" in w and "ignored" in w for w in req.warnings)


def test_one_line_may_carry_several_options() -> None:
    req = request(script("-t 0:30:00 --exclusive --mem=0 --ntasks-per-node=8"))
    assert (req.time_limit_s, req.exclusive, req.tasks_per_node) == (1800, True, 8)


def test_an_unquoted_hash_starts_a_comment_even_after_a_tab() -> None:
    req = request("#!/bin/bash\n#SBATCH -p mlperf\t\t# partition\n#SBATCH --output=a.out#x\n")
    assert (req.partition, req.output) == ("mlperf", "a.out")


def test_quotes_keep_spaces_and_hashes() -> None:
    req = request(script("--job-name='my job #1'", '--comment="a b"'))
    assert (req.name, req.comment) == ("my job #1", "a b")


def test_the_command_line_overrides_the_script() -> None:
    req = request(script("-t 10", "-J from-script"), "-t", "20", "--job-name=from-cli")
    assert (req.time_limit_s, req.name) == (1200, "from-cli")


def test_the_last_of_repeated_directives_wins() -> None:
    assert request(script("-N 2", "-N 3")).nodes == 3


def test_options_accept_a_space_or_an_equals_sign_or_an_attached_short_value() -> None:
    assert request(script("--time 10")).time_limit_s == 600
    assert request(script("--time=10")).time_limit_s == 600
    assert request(script("-t10")).time_limit_s == 600


def test_long_options_may_be_abbreviated_to_a_unique_prefix() -> None:
    assert request(script("--part=gpu")).partition == "gpu"


def test_an_ambiguous_abbreviation_is_an_error_naming_the_line() -> None:
    with pytest.raises(SbatchError, match=r"job\.sh: line 2: .*ambiguous"):
        request(script("--mem-per=4G"))


def test_a_bad_time_names_the_file_the_line_and_the_option() -> None:
    with pytest.raises(SbatchError, match=r'job\.sh: line 3: --time: invalid time limit "5m"'):
        request(script("-J x", "-t 5m"))


def test_a_bad_value_on_the_command_line_says_command_line() -> None:
    with pytest.raises(SbatchError, match=r"command line: --nodes: invalid node count"):
        request(script(), "-N", "two")


def test_an_unknown_memory_unit_is_an_error_naming_the_unit() -> None:
    with pytest.raises(SbatchError, match=r'line 2: --mem: .*unknown unit "X"'):
        request(script("--mem=4X"))


def test_a_directive_continued_with_a_backslash_is_an_error_naming_the_line() -> None:
    with pytest.raises(SbatchError, match=r"line 2: a #SBATCH directive cannot continue"):
        request("#!/bin/bash\n#SBATCH --job-name=a \\\n#SBATCH -t 5\n")


def test_an_unterminated_quote_is_an_error_naming_the_line() -> None:
    with pytest.raises(SbatchError, match=r"line 2: unterminated"):
        request("#!/bin/bash\n#SBATCH -J 'oops\n")


def test_a_script_without_an_interpreter_line_is_refused_as_sbatch_does() -> None:
    with pytest.raises(SbatchError, match=r"line 1: .*must start with #!"):
        request("echo hi\n")


def test_a_body_that_is_not_valid_shell_is_not_rejected() -> None:
    assert request("#!/bin/bash\n#SBATCH -J ok\nif then fi (((\n").name == "ok"


def test_unknown_options_are_warned_about_by_name_and_skipped() -> None:
    req = request(script("--frobnicate=3", "-J ok"), "--also-unknown")
    assert req.name == "ok"
    assert any("--frobnicate=3" in w and "line 2" in w for w in req.warnings)
    assert any("--also-unknown" in w and "command line" in w for w in req.warnings)


def test_options_that_change_meaning_are_recorded_with_the_reason() -> None:
    req = request(script("--mail-type=ALL", "--hint=nomultithread"))
    recorded = {r.option: r for r in req.recorded}
    assert recorded["mail-type"].why == "no mail is sent"
    assert recorded["mail-type"].where == "job.sh: line 2"
    assert "hint" in recorded


def test_directive_like_lines_that_do_not_start_the_line_are_comments() -> None:
    assert request("#!/bin/bash\n  #SBATCH -J indented\n##SBATCH -J double\n").name == "job.sh"


def test_wrap_makes_a_sh_script_of_the_command() -> None:
    req = request(None, "--wrap", "sleep 5", "-J", "w")
    assert req.script.startswith("#!/bin/sh\n") and "sleep 5" in req.script
    assert req.name == "w"


def test_the_default_job_name_is_the_script_file_name() -> None:
    assert request(script(), name="/tmp/dir/train.sh").name == "train.sh"


def test_words_after_the_script_are_its_arguments_not_options() -> None:
    req = request(script(), "-J", "a", args=("-J", "b", "--x"))
    assert (req.name, req.script_args) == ("a", ["-J", "b", "--x"])


def test_of_two_bad_values_the_first_in_the_file_is_reported() -> None:
    """sbatch checks each value as it reads the option: the memory on line 3 is converted
    before the time limit on line 2, but line 2 is the one reported."""
    with pytest.raises(SbatchError, match=r'job\.sh: line 2: --time: invalid time limit "5m"'):
        request(script("-t 5m", "--mem=4X"))


def test_a_bad_value_is_reported_before_a_conflict_between_options() -> None:
    """--cpus-per-gpu without GPUs is a conflict found once every option is read; the bad
    time limit after it is found while reading."""
    with pytest.raises(SbatchError, match=r'job\.sh: line 3: --time: invalid time limit "5m"'):
        request(script("--cpus-per-gpu=2", "-t 5m"))


def test_a_bad_value_in_the_script_is_reported_before_one_on_the_command_line() -> None:
    """sbatch reads the script's directives first, then the command line (which wins)."""
    with pytest.raises(SbatchError, match=r"line 2: --mem: .*unknown unit"):
        request(script("--mem=4X"), "-N", "two")


def test_a_conflict_alone_is_still_reported() -> None:
    with pytest.raises(SbatchError, match=r"line 2: --cpus-per-gpu: needs GPUs"):
        request(script("--cpus-per-gpu=2"))
