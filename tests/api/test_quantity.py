"""Kubernetes quantities are parsed exactly, as resource.Quantity parses them."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubehpc.api.quantity import canonical, parse_quantity, resource_units


@pytest.mark.parametrize(
    ("written", "exact"),
    [
        ("2", Fraction(2)),
        (2, Fraction(2)),
        (0.5, Fraction(1, 2)),
        ("500m", Fraction(1, 2)),
        ("8Gi", Fraction(8 * 1024**3)),
        ("1.5G", Fraction(1_500_000_000)),
        ("1e3", Fraction(1000)),
        ("1E-2", Fraction(1, 100)),
        ("+1k", Fraction(1000)),
        ("-3", Fraction(-3)),
        (".5", Fraction(1, 2)),
        ("5.", Fraction(5)),
        ("100n", Fraction(1, 10**7)),
        ("2u", Fraction(2, 10**6)),
        ("1Ki", Fraction(1024)),
        ("1Ei", Fraction(1024**6)),
        ("1E", Fraction(10**18)),
        ("0.1", Fraction(1, 10)),
    ],
)
def test_quantity_is_parsed_exactly(written: object, exact: Fraction) -> None:
    assert parse_quantity(written).amount == exact


@pytest.mark.parametrize(
    "written", ["8Gx", "", " 1", "1 ", "1.2.3", "Gi", "1gi", "1KI", "e3", "--1", "1e", True, None, [1]]
)
def test_invalid_quantity_raises_value_error_naming_it(written: object) -> None:
    with pytest.raises(ValueError, match="invalid quantity"):
        parse_quantity(written)


def test_invalid_quantity_message_quotes_the_input() -> None:
    with pytest.raises(ValueError) as err:
        parse_quantity("8Gx")
    assert str(err.value) == 'invalid quantity "8Gx"'


def test_precision_beyond_nano_rounds_up_like_the_api_server() -> None:
    assert parse_quantity("0.0000000001").amount == Fraction(1, 10**9)


@pytest.mark.parametrize(
    ("written", "milli", "whole"),
    [("500m", 500, 1), ("2", 2000, 2), ("0.1", 100, 1), ("1n", 1, 1), ("1.5Gi", 1610612736000, 1610612736)],
)
def test_milli_value_and_value_round_up(written: str, milli: int, whole: int) -> None:
    q = parse_quantity(written)
    assert (q.milli_value(), q.value()) == (milli, whole)


@pytest.mark.parametrize(
    ("written", "spelled"),
    [
        ("1.5Gi", "1536Mi"),
        ("0.5", "500m"),
        ("1000", "1k"),
        ("1500", "1500"),
        ("2000m", "2"),
        ("1e3", "1e3"),
        ("1536", "1536"),
        ("512Mi", "512Mi"),
        ("0.5Gi", "512Mi"),
        ("0", "0"),
        ("-1k", "-1k"),
    ],
)
def test_canonical_form_matches_the_api_server(written: str, spelled: str) -> None:
    assert canonical(parse_quantity(written)) == spelled


@pytest.mark.parametrize(
    ("name", "written", "units"),
    [
        ("cpu", "500m", 500),
        ("cpu", 2, 2000),
        ("cpu", "1e3", 1_000_000),
        ("memory", "8Gi", 8 * 1024**3),
        ("memory", "1.5G", 1_500_000_000),
        ("ephemeral-storage", "10Mi", 10 * 1024**2),
        ("pods", "110", 110),
        ("nvidia.com/gpu", 1, 1),
        ("nvidia.com/gpu", "2", 2),
        ("nvidia.com/mig-1g.10gb", 2, 2),
        ("hugepages-2Mi", "4Mi", 4 * 1024**2),
    ],
)
def test_resource_units_are_millicores_for_cpu_and_whole_units_otherwise(
    name: str, written: object, units: int
) -> None:
    assert resource_units(name, written) == units


@pytest.mark.parametrize("written", ["0.5", 0.5, "500m"])
def test_extended_resources_must_be_whole_numbers(written: object) -> None:
    with pytest.raises(ValueError, match="must be an integer"):
        resource_units("nvidia.com/gpu", written)


def test_fractional_memory_rounds_up_to_a_byte() -> None:
    assert resource_units("memory", "0.5") == 1


@given(
    st.integers(min_value=-(10**12), max_value=10**12),
    st.sampled_from(["", "m", "k", "M", "G", "n", "u", "Ki", "Mi", "Gi", "e3", "e-2"]),
)
def test_the_canonical_form_parses_back_to_the_same_amount(number: int, suffix: str) -> None:
    q = parse_quantity(f"{number}{suffix}")
    assert parse_quantity(canonical(q)).amount == q.amount
