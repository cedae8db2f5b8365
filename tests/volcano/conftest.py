"""Volcano tests reuse the end-to-end kit (a real `kubehpc up`, the real kubectl)."""

from __future__ import annotations

import sys
from pathlib import Path

E2E = Path(__file__).resolve().parents[1] / "e2e"
if str(E2E) not in sys.path:
    sys.path.append(str(E2E))
