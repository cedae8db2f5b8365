"""Parsing kubectl-style resource arguments: ``TYPE``, ``TYPE NAME...``, ``TYPE/NAME...``."""

from __future__ import annotations

from dataclasses import dataclass

from kubehpc.cli.session import CliError


@dataclass(frozen=True)
class Target:
    type: str
    names: tuple[str, ...] = ()


def parse_targets(args: list[str], need_names: bool = False) -> list[Target]:
    """``["pods"]`` / ``["pods", "a", "b"]`` / ``["pod/a", "job/b"]`` / ``["pods,jobs"]``."""
    if not args:
        raise CliError("you must specify the type of resource, e.g. `pods` or `job/pi`")
    if "/" in args[0]:
        targets: list[Target] = []
        for arg in args:
            kind, sep, name = arg.partition("/")
            if not sep or not kind or not name:
                raise CliError(
                    f"there is no need to specify a resource type as a separate argument "
                    f"when passing arguments in resource/name form (got {arg!r})"
                )
            targets.append(Target(kind, (name,)))
        return targets
    types = [t for t in args[0].split(",") if t]
    names = tuple(args[1:])
    if names and len(types) > 1:
        raise CliError("names cannot be given together with several resource types; use TYPE/NAME")
    if need_names and not names:
        raise CliError(f"resource name(s) required for {args[0]}")
    return [Target(t, names) for t in types]
