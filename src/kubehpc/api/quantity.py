"""Kubernetes resource quantities, parsed exactly.

The grammar is ``k8s.io/apimachinery`` ``resource.Quantity``'s::

    <quantity>  ::= <sign>? <number> <suffix>?
    <number>    ::= <digits> | <digits> "." <digits>? | "." <digits>
    <suffix>    ::= binarySI (Ki Mi Gi Ti Pi Ei) | decimalSI (n u m k M G T P E)
                  | decimal exponent ("e" or "E" followed by a signed integer)

Values are held as :class:`fractions.Fraction`, never floats: ``0.1`` CPU is exactly 100
millicores and ``1.5Gi`` is exactly 1610612736 bytes. Like the API server, amounts finer than
a nano-unit round up to it.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

_BINARY = {"Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "Ti": 1024**4, "Pi": 1024**5, "Ei": 1024**6}
_DECIMAL_EXP = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_EXP_SUFFIX = {e: s for s, e in _DECIMAL_EXP.items()}

_QUANTITY_RE = re.compile(
    r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?"
)
_NANO = Fraction(1, 10**9)
# (exponent, 10 ** (exponent + 9)) from exa down to nano: the divisor of an amount in nano-units.
_NANO_SCALES = tuple((e, 10 ** (e + 9)) for e in range(18, -12, -3))

BINARY_SI = "BinarySI"
DECIMAL_SI = "DecimalSI"
DECIMAL_EXPONENT = "DecimalExponent"


@dataclass(frozen=True)
class Quantity:
    """An exact quantity and the format (suffix family) it was written in."""

    amount: Fraction
    format: str = DECIMAL_SI

    def value(self) -> int:
        """Whole units, rounded up (``Quantity.Value()``): bytes for memory."""
        return math.ceil(self.amount)

    def milli_value(self) -> int:
        """Thousandths, rounded up (``Quantity.MilliValue()``): millicores for CPU."""
        return math.ceil(self.amount * 1000)

    def is_integer(self) -> bool:
        return self.amount.denominator == 1

    def __str__(self) -> str:
        return canonical(self)


def _exact_number(number: str) -> Fraction:
    whole, _, frac = number.lstrip("+-").partition(".")
    value = Fraction(int(whole or "0")) + (Fraction(int(frac), 10 ** len(frac)) if frac else 0)
    return -value if number.startswith("-") else value


def parse_quantity(value: Any) -> Quantity:
    """Parse a quantity as written in a manifest: a string, or a YAML/JSON int or float."""
    if type(value) is str:  # the common case first: validation parses every request and limit
        return _parse_text(value)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"invalid quantity {_show(value)}: must be a string or a number")
    if isinstance(value, int):
        return Quantity(Fraction(value))
    # A float arrives from YAML/JSON as the digits the user wrote; repr() gives those digits back.
    return _parse_text(repr(value) if isinstance(value, float) else value)


@functools.lru_cache(maxsize=4096)
def _parse_text(text: str) -> Quantity:
    # Manifests repeat a handful of quantities ("500m", "8Gi") thousands of times, and the
    # result is immutable, so parsing each distinct text once takes Fraction arithmetic off
    # the write path of the store.
    match = _QUANTITY_RE.fullmatch(text)
    if match is None:
        raise ValueError(f'invalid quantity "{text}"')
    number, suffix = match.group(1), match.group(2) or ""
    amount = _exact_number(number)
    if suffix in _BINARY:
        amount *= _BINARY[suffix]
        fmt = BINARY_SI
    elif suffix[:1] in ("e", "E") and len(suffix) > 1:
        exponent = int(suffix[1:])
        if abs(exponent) > 1000:  # the API server caps exponents far below this; avoid huge ints
            raise ValueError(f'invalid quantity "{text}": exponent out of range')
        amount *= Fraction(10) ** exponent
        fmt = DECIMAL_EXPONENT
    else:
        amount *= Fraction(10) ** _DECIMAL_EXP[suffix]
        fmt = DECIMAL_SI
    if amount.denominator != 1 and (amount / _NANO).denominator != 1:
        amount = Fraction(math.ceil(amount / _NANO)) * _NANO
    return Quantity(amount, fmt)


def canonical(q: Quantity) -> str:
    """The API server's canonical spelling: ``1.5Gi`` -> ``1536Mi``, ``0.5`` -> ``500m``."""
    amount = q.amount
    if amount == 0:
        return "0"
    sign = "-" if amount < 0 else ""
    amount = abs(amount)
    if q.format == BINARY_SI and amount.denominator == 1 and amount >= 1024:
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            if amount.numerator % _BINARY[suffix] == 0:
                return f"{sign}{amount.numerator // _BINARY[suffix]}{suffix}"
    # Largest power of 1000 (down to nano) that leaves an integer mantissa, found on the
    # amount in nano-units with integer arithmetic (Fraction division was most of the cost).
    nanos = amount * 10**9
    if nanos.denominator != 1:  # pragma: no cover
        raise AssertionError("amounts are rounded to nano-units when parsed")
    for exponent, scale in _NANO_SCALES:
        mantissa, rest = divmod(nanos.numerator, scale)
        if rest == 0:
            if q.format == DECIMAL_EXPONENT:
                suffix = f"e{exponent}" if exponent else ""
            else:
                suffix = _EXP_SUFFIX[exponent]
            return f"{sign}{mantissa}{suffix}"
    raise AssertionError("the nano scale divides every amount in nano-units")  # pragma: no cover


def is_native_resource(name: str) -> bool:
    """Resources owned by Kubernetes: no domain, or a kubernetes.io domain."""
    if "/" not in name:
        return True
    domain = name.split("/", 1)[0]
    return domain == "kubernetes.io" or domain.endswith(".kubernetes.io")


def is_extended_resource(name: str) -> bool:
    """Device-plugin style resources (``nvidia.com/gpu``): whole numbers only."""
    return not is_native_resource(name) and not name.startswith("requests.")


def resource_units(name: str, value: Any) -> int:
    """An amount of resource ``name`` as an integer: millicores for cpu, whole units otherwise.

    Memory and storage come out in bytes, pods and extended resources (``nvidia.com/gpu``,
    ``nvidia.com/mig-1g.10gb``) as counts. Extended resources must be whole numbers, as the API
    server requires.
    """
    if type(value) is str:
        return _text_units(name, value)
    return _units(name, parse_quantity(value), value)


# Requests and quotas repeat a handful of (resource, text) pairs across every pod, workload
# and admission the controllers read; the answer is an int, so each pair is worked out once.
@functools.lru_cache(maxsize=8192)
def _text_units(name: str, text: str) -> int:
    return _units(name, _parse_text(text), text)


def _units(name: str, q: Quantity, value: Any) -> int:
    if name == "cpu":
        return q.milli_value()
    if is_extended_resource(name) and not q.is_integer():
        raise ValueError(f"invalid quantity {_show(value)} for {name}: must be an integer")
    return q.value()


def _show(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)
