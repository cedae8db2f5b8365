"""Durations and progress display for the verbs that wait."""

from __future__ import annotations

import re
import time

from rich.console import Console
from rich.status import Status

from kubehpc.cli.session import CliError

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """A Go duration as kubectl takes it (``30s``, ``1m30s``, ``500ms``); a bare number is seconds."""
    text = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    pos, total = 0, 0.0
    for m in _PART.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(text) or not text:
        raise CliError(f'invalid duration "{text}": use a number with a unit, e.g. 30s, 2m, 1h')
    return total


class Progress:
    """A spinner for a polling loop: call ``tick()`` each round. It appears only on a terminal
    and only once the wait has lasted ``delay_s``, so short waits and piped output stay clean."""

    def __init__(self, console: Console, message: str, delay_s: float = 1.0) -> None:
        self.console = console
        self.message = message
        self.delay_s = delay_s
        self.started = time.monotonic()
        self._status: Status | None = None

    def tick(self) -> None:
        if not self.console.is_terminal:
            return
        elapsed = time.monotonic() - self.started
        if elapsed < self.delay_s:
            return
        text = f"{self.message} ({elapsed:.0f}s)"
        if self._status is None:
            self._status = self.console.status(text, spinner="dots")
            self._status.start()
        else:
            self._status.update(text)

    def stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
