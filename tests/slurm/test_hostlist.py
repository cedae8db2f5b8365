"""Slurm hostlist syntax: expansion, compression, and round trips."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubehpc.slurm.hostlist import HostlistError, compress, expand, natural_key


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("node01", ["node01"]),
        ("node[01-04,07]", ["node01", "node02", "node03", "node04", "node07"]),
        ("gpu-a[1-2]-b[3-4]", ["gpu-a1-b3", "gpu-a1-b4", "gpu-a2-b3", "gpu-a2-b4"]),
        ("a1,b[2-3],c", ["a1", "b2", "b3", "c"]),
        ("n[9-10]", ["n9", "n10"]),
        ("n[08-10]", ["n08", "n09", "n10"]),
        ("adev[6,13,15]", ["adev6", "adev13", "adev15"]),
        ("peta[10000-10002]", ["peta10000", "peta10001", "peta10002"]),
    ],
)
def test_hostlists_expand_as_slurm_expands_them(text: str, hosts: list[str]) -> None:
    assert expand(text) == hosts


@pytest.mark.parametrize(
    ("hosts", "text"),
    [
        (["node01", "node02", "node03", "node04", "node07"], "node[01-04,07]"),
        (["adev7", "adev8", "adev14"], "adev[7-8,14]"),
        (["n9", "n10"], "n[9-10]"),
        (["login"], "login"),
        (["a1", "b2", "b3"], "a1,b[2-3]"),
        (["slurm-7-0", "slurm-7-1"], "slurm-7-[0-1]"),
    ],
)
def test_host_names_compress_to_slurm_hostlists(hosts: list[str], text: str) -> None:
    assert compress(hosts) == text


@pytest.mark.parametrize("text", ["node[1-", "node]1", "node[a-b]", "node[5-1]", "n[[1]]"])
def test_a_malformed_hostlist_is_an_error(text: str) -> None:
    with pytest.raises(HostlistError):
        expand(text)


def test_a_name_with_hostlist_syntax_characters_cannot_be_compressed() -> None:
    with pytest.raises(HostlistError, match="cannot be written"):
        compress(["a,b"])


def test_nodes_sort_by_their_number_not_as_text() -> None:
    assert sorted(["n10", "n9", "m1"], key=natural_key) == ["m1", "n9", "n10"]


_names = st.builds(
    lambda prefix, number, pad: prefix + (str(number).zfill(pad) if number is not None else ""),
    st.sampled_from(["node", "gpu-a", "n", "x-1-", "login"]),
    st.one_of(st.none(), st.integers(min_value=0, max_value=120)),
    st.integers(min_value=0, max_value=4),
)


@given(st.lists(_names, max_size=40))
def test_expanding_a_compressed_list_gives_the_list_back(hosts: list[str]) -> None:
    assert expand(compress(hosts)) == hosts


@given(st.lists(st.integers(min_value=0, max_value=300), max_size=40, unique=True))
def test_compressing_an_expanded_canonical_hostlist_is_stable(numbers: list[int]) -> None:
    text = compress([f"node{n:03d}" for n in sorted(numbers)])
    assert compress(expand(text)) == text
