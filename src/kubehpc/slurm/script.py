"""Reading a batch script's ``#SBATCH`` directives the way sbatch does.

* Directives are lines starting with ``#SBATCH`` (at the very start of the line). Reading
  stops at the first line that is neither blank nor a comment: later ``#SBATCH`` lines are
  plain comments to sbatch; kubehpc says so in a warning naming the line.
* One line may carry several options (``#SBATCH -t 0:30:00 --exclusive --mem=0``).
* Words are split on white space; ``'...'`` and ``"..."`` quote, ``\\`` escapes the next
  character, and an unquoted ``#`` ends the line (``--output=x.out  # comment``).
* A line ending in ``\\`` is an error: sbatch has no continuation lines, and the option would
  silently get a stray backslash.
* The script must start with ``#!`` (sbatch refuses anything else).
"""

from __future__ import annotations

from dataclasses import dataclass, field

DIRECTIVE = "#SBATCH"


class ScriptError(ValueError):
    pass


@dataclass(frozen=True)
class Directive:
    line: int
    words: tuple[str, ...]


@dataclass
class ScriptDirectives:
    directives: list[Directive] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    interpreter: str = ""


def split_directive(text: str, line: int) -> list[str]:
    """The words of one directive's option text (the part after ``#SBATCH``)."""
    words: list[str] = []
    current: list[str] = []
    in_word = False
    quote = ""
    i = 0
    while i < len(text):
        ch = text[i]
        i += 1
        if quote:
            if ch == quote:
                quote = ""
            else:
                current.append(ch)
            continue
        if ch == "\\":
            if i >= len(text):
                raise ScriptError(
                    f'line {line}: a #SBATCH directive cannot continue on the next line (trailing "\\")'
                )
            current.append(text[i])
            in_word = True
            i += 1
            continue
        if ch in "'\"":
            quote = ch
            in_word = True
            continue
        if ch == "#":
            break
        if ch.isspace():
            if in_word:
                words.append("".join(current))
                current, in_word = [], False
            continue
        current.append(ch)
        in_word = True
    if quote:
        raise ScriptError(f"line {line}: unterminated {quote} quote in #SBATCH directive")
    if in_word:
        words.append("".join(current))
    return words


def read_directives(script: str) -> ScriptDirectives:
    lines = script.splitlines()
    if not lines or not lines[0].startswith("#!"):
        raise ScriptError(
            "line 1: this does not look like a batch script: the first line must start with #! "
            "followed by the path to an interpreter (or use --wrap)"
        )
    out = ScriptDirectives(interpreter=lines[0][2:].strip())
    in_header = True
    for number, raw in enumerate(lines[1:], start=2):
        stripped = raw.strip()
        if raw.startswith(DIRECTIVE) and (len(raw) == len(DIRECTIVE) or raw[len(DIRECTIVE)].isspace()):
            if not in_header:
                out.warnings.append(
                    f"line {number}: #SBATCH after the first command is ignored, as sbatch ignores it"
                )
                continue
            words = split_directive(raw[len(DIRECTIVE) :].rstrip("\r"), number)
            if words:
                out.directives.append(Directive(number, tuple(words)))
            continue
        if not stripped or stripped.startswith("#"):
            continue
        in_header = False
    return out


def wrap_script(command: str) -> str:
    """The script sbatch makes of ``--wrap``: the command under ``#!/bin/sh``."""
    return f"#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{command}\n"
