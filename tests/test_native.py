"""Compiled modules (mypyc, scripts/build_native.py) run only while they match their sources;
otherwise every module loads from source. ``make test`` builds them before the suite, so the
suite runs what ``make demo`` and ``kubehpc up`` run."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import kubehpc
from kubehpc import _native

SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")


def fake_build(src: Path, package: str = "pkgx") -> Path:
    """A package whose module ``mod`` has a source and an "extension module" of garbage bytes
    (importing it fails), with a manifest recording the source's hash as a build would."""
    folder = src / package
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "mod.py").write_text("WHERE = 'source'\n")
    (folder / f"mod{SUFFIX}").write_bytes(b"not an extension module")
    manifest = folder / "_native.json"
    digest = hashlib.sha256((folder / "mod.py").read_bytes()).hexdigest()
    manifest.write_text(
        json.dumps(
            {
                "python": sys.version.split()[0],
                "files": [f"{package}/mod{SUFFIX}"],
                "modules": {f"{package}.mod": digest},
            }
        )
    )
    return manifest


def test_a_build_that_matches_its_sources_is_current(tmp_path: Path) -> None:
    manifest = fake_build(tmp_path)
    assert _native.stale_reason(manifest, tmp_path) is None


def test_a_source_changed_after_the_build_makes_it_stale(tmp_path: Path) -> None:
    manifest = fake_build(tmp_path)
    (tmp_path / "pkgx" / "mod.py").write_text("WHERE = 'edited'\n")
    assert _native.stale_reason(manifest, tmp_path) == "pkgx/mod.py changed since it was compiled"


def test_a_c_source_changed_after_the_build_makes_it_stale(tmp_path: Path) -> None:
    manifest = fake_build(tmp_path)
    helper = tmp_path / "pkgx" / "helper.c"
    helper.write_text("/* as built */\n")
    data = json.loads(manifest.read_text())
    data["modules"]["pkgx.helper"] = hashlib.sha256(helper.read_bytes()).hexdigest()
    manifest.write_text(json.dumps(data))
    assert _native.stale_reason(manifest, tmp_path) is None
    helper.write_text("/* edited */\n")
    assert _native.stale_reason(manifest, tmp_path) == "pkgx/helper.c changed since it was compiled"


def test_a_missing_extension_file_makes_the_build_stale(tmp_path: Path) -> None:
    manifest = fake_build(tmp_path)
    (tmp_path / "pkgx" / f"mod{SUFFIX}").unlink()
    assert _native.stale_reason(manifest, tmp_path) == f"pkgx/mod{SUFFIX} missing"


def test_no_manifest_means_not_built(tmp_path: Path) -> None:
    assert _native.stale_reason(tmp_path / "_native.json", tmp_path) == "not built (scripts/build_native.py)"


def test_a_build_for_another_python_is_stale(tmp_path: Path) -> None:
    manifest = fake_build(tmp_path)
    data = json.loads(manifest.read_text())
    data["python"] = "3.0.0"
    manifest.write_text(json.dumps(data))
    assert "built for Python 3.0.0" in str(_native.stale_reason(manifest, tmp_path))


def load_in_subprocess(src: Path, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=src,
        env={**os.environ, "PYTHONPATH": str(src), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


SELECT_THEN_IMPORT = (
    "from pathlib import Path; from kubehpc import _native\n"
    "src = Path.cwd()\n"
    "print(_native.select('pkgx', src / 'pkgx' / '_native.json', src, MODE))\n"
    "import pkgx.mod; print(pkgx.mod.WHERE)\n"
)


def select_then_import(tmp_path: Path, mode: str) -> list[str]:
    """What ``_native.select`` said, then where ``pkgx.mod`` was loaded from, in a fresh
    interpreter (``mode`` as Python source)."""
    code = SELECT_THEN_IMPORT.replace("MODE", mode)
    done = load_in_subprocess(tmp_path, code, PYTHONPATH=f"{tmp_path}:{_src()}")
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_stale_build_is_never_imported_its_sources_are(tmp_path: Path) -> None:
    fake_build(tmp_path)
    (tmp_path / "pkgx" / "mod.py").write_text("WHERE = 'edited source'\n")
    said = select_then_import(tmp_path, "None")
    assert said == ["pkgx/mod.py changed since it was compiled", "edited source"]


def test_without_the_guard_python_prefers_the_extension_module(tmp_path: Path) -> None:
    # What the guard is for: the plain import system picks the (here broken) extension file.
    fake_build(tmp_path)
    done = load_in_subprocess(tmp_path, "import pkgx.mod", PYTHONPATH=str(tmp_path))
    assert done.returncode != 0
    assert "ImportError" in done.stderr


def test_native_off_loads_sources_even_when_the_build_is_current(tmp_path: Path) -> None:
    fake_build(tmp_path)
    assert select_then_import(tmp_path, "'off'") == ["KUBEHPC_NATIVE=off", "source"]


def test_native_require_refuses_a_stale_build(tmp_path: Path) -> None:
    fake_build(tmp_path)
    (tmp_path / "pkgx" / "mod.py").write_text("WHERE = 'edited'\n")
    with pytest.raises(ImportError, match=r"required \(KUBEHPC_NATIVE=require\) but pkgx/mod\.py changed"):
        _native.select("pkgx", tmp_path / "pkgx" / "_native.json", tmp_path, "require")


def _src() -> Path:
    return Path(kubehpc.__file__).resolve().parent.parent


def test_the_hot_modules_run_compiled_unless_switched_off() -> None:
    """``make test`` (and ``make demo``) build them first; run ``make native`` after editing a
    compiled module, or this fails with the reason. With ``KUBEHPC_NATIVE=off`` (the suite run
    on the sources) they must all be the sources."""
    import kubehpc.controllers.job.controller
    import kubehpc.sched.admission.cycle
    import kubehpc.store.writes

    hot = (kubehpc.store.writes, kubehpc.controllers.job.controller, kubehpc.sched.admission.cycle)
    if os.environ.get(_native.ENV) == "off":
        assert kubehpc.NATIVE_OFF_REASON == "KUBEHPC_NATIVE=off"
        assert not any(_native.compiled(m) for m in hot)
        return
    assert kubehpc.NATIVE_OFF_REASON is None, f"compiled modules not in use: {kubehpc.NATIVE_OFF_REASON}"
    for module in hot:
        assert _native.compiled(module), module.__name__
