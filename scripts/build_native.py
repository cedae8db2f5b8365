"""Compile kubehpc's hot modules with mypyc and install them beside their sources.

The control plane's CPU goes to thousands of small typed functions (store writes, watch
delivery, the controllers' reconcile passes, the admission core): a flat profile where the
interpreter's own overhead is the largest single cost. mypyc compiles exactly such code (typed,
strict-mypy-clean Python) to C extension modules, as mypy and black ship themselves.

The compiled modules are the same sources: ``kubehpc/_native.py`` loads them only while every
source still matches the hash recorded here at build time, and falls back to the pure-Python
modules otherwise (an edited file, ``KUBEHPC_NATIVE=off``), so a stale build never runs.

Builds are cached by the hash of everything that goes into them (the sources, this script,
the mypy config, the interpreter and mypy versions) under ``~/.cache/kubehpc/native`` (or
``$KUBEHPC_NATIVE_CACHE``): a build costs ~2-3 minutes on 2 cores, a cached one a copy.

    .venv/bin/python scripts/build_native.py [--clean]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
PACKAGE = SRC / "kubehpc"
MANIFEST = PACKAGE / "_native.json"

# What is compiled, as paths under src/kubehpc: a folder means its .py files (not its
# subfolders). The hot path of the embedded control plane: store, schema validation, the
# controllers a Job goes through, and the scheduling core.
COMPILED = (
    "store",
    "api/meta.py",
    "api/fields.py",
    "api/schema.py",
    "api/names.py",
    "api/quantity.py",
    "api/defaults.py",
    "api/immutable.py",
    "api/registry.py",
    "api/kinds/core.py",
    "api/kinds/core_validation.py",
    "api/kinds/kueue/conversion.py",
    "api/crd_checks.py",
    "controllers/watching.py",
    "controllers/scheduler.py",
    "controllers/gc.py",
    "controllers/job",
    "controllers/kueue",
    "controllers/kueue/jobs",
    "controllers/scheduling",
    "sched",
    "sched/admission",
)
# Left to the interpreter, and why: mypyc compiles neither async generators nor
# runtime-checkable Protocols (it turns a Protocol into a plain class).
INTERPRETED = (
    "store/awatch.py",  # async generators (the HTTP server's watch streams)
    "controllers/kueue/jobprotocols.py",  # runtime-checkable Protocols (a kind's optional parts)
    "store/heap.py",  # chooses, once at import, between store/_untrack.c and doing nothing
)
# Written in C, where Python has no word for it: taking objects out of the collector's sight.
C_EXTENSIONS = ("store/_untrack.c",)


def compiled_sources() -> list[Path]:
    skip = {PACKAGE / p for p in INTERPRETED}
    found: set[Path] = set()
    for entry in COMPILED:
        path = PACKAGE / entry
        found.update(path.glob("*.py") if path.is_dir() else [path])
    missing = [p for p in found if not p.is_file()]
    if missing:
        raise SystemExit(f"build_native.py: COMPILED names missing files: {sorted(map(str, missing))}")
    return sorted(found - skip)


def c_sources() -> list[Path]:
    return [PACKAGE / p for p in C_EXTENSIONS]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def mypy_config() -> str:
    """The project's mypy settings (pyproject.toml) as an ini file: setuptools, which runs
    the C build, would read a pyproject.toml in the build folder as the project's own."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    lines = ["[mypy]"]
    for key, value in config.items():
        if key in ("overrides", "files"):
            continue
        lines.append(f"{key} = {_ini(value)}")
    for override in config.get("overrides", []):
        modules = override["module"] if isinstance(override["module"], list) else [override["module"]]
        for module in modules:
            lines.append(f"[mypy-{module}]")
            lines += [f"{k} = {_ini(v)}" for k, v in override.items() if k != "module"]
    return "\n".join(lines) + "\n"


def _ini(value: object) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def build_key(sources: list[Path], config: str) -> str:
    import mypy.version

    digest = hashlib.sha256()
    for part in (sys.version, sysconfig.get_platform(), mypy.version.__version__, config):
        digest.update(part.encode() + b"\0")
    digest.update(Path(__file__).read_bytes())
    # Every source, compiled or not: mypyc's type analysis reads the modules they import.
    for path in sorted([*PACKAGE.rglob("*.py"), *c_sources()]):
        digest.update(str(path.relative_to(SRC)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:24]


def build(sources: list[Path], config: str, into: Path) -> None:
    """Run mypyc on a copy of the sources; the extension files land in ``into``."""
    with tempfile.TemporaryDirectory(prefix="kubehpc-native-") as tmp:
        work = Path(tmp) / "src"
        shutil.copytree(PACKAGE, work / "kubehpc", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        (work / "mypy.ini").write_text(config)
        files = [str(p.relative_to(SRC)) for p in sources]
        c_modules = {module_name(p): str(p.relative_to(SRC)) for p in c_sources()}
        setup = (
            "import sys\n"
            "from setuptools import Extension, setup\n"
            "from mypyc.build import mypycify\n"
            f"c_modules = [Extension(name, [path]) for name, path in {c_modules!r}.items()]\n"
            "setup(name='kubehpc-native', ext_modules=mypycify(sys.argv[1:], opt_level='3') + c_modules,\n"
            "      script_args=['build_ext', '--inplace'])\n"
        )
        log = Path(tmp) / "build.log"
        with log.open("w") as out:
            done = subprocess.run(
                [sys.executable, "-c", setup, *files], cwd=work, stdout=out, stderr=subprocess.STDOUT
            )
        if done.returncode != 0:
            sys.stderr.write(log.read_text()[-6000:])
            raise SystemExit(f"build_native.py: mypyc failed (exit {done.returncode}); its log is above")
        into.mkdir(parents=True)
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        for built in work.rglob(f"*{suffix}"):
            if "build" in built.relative_to(work).parts:
                continue
            target = into / built.relative_to(work)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(built, target)


def remove_installed() -> None:
    """Take away the manifest first (the modules are then loaded from source), then the
    extension files of any earlier build."""
    MANIFEST.unlink(missing_ok=True)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    for path in [*SRC.glob(f"*__mypyc{suffix}"), *PACKAGE.rglob(f"*{suffix}")]:
        path.unlink()


def install(cached: Path, sources: list[Path]) -> int:
    remove_installed()
    files = sorted(p.relative_to(cached) for p in cached.rglob("*") if p.is_file())
    for rel in files:
        shutil.copy2(cached / rel, SRC / rel)
    manifest = {
        "python": sys.version.split()[0],
        "files": [str(rel) for rel in files],
        "modules": {module_name(p): file_hash(p) for p in [*sources, *c_sources()]},
    }
    # Written last: until it is there, nothing of this build is loaded.
    tmp = MANIFEST.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    tmp.replace(MANIFEST)
    return len(manifest["modules"])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clean", action="store_true", help="remove the compiled modules and stop")
    args = parser.parse_args()
    if args.clean:
        remove_installed()
        print("native: removed; kubehpc runs from its sources")
        return
    sources = compiled_sources()
    config = mypy_config()
    key = build_key(sources, config)
    cache_root = Path(os.environ.get("KUBEHPC_NATIVE_CACHE") or Path.home() / ".cache" / "kubehpc" / "native")
    cached = cache_root / key
    if not cached.is_dir():
        print(f"native: compiling {len(sources)} modules with mypyc (a few minutes, once per change)")
        partial = cache_root / f"{key}.partial-{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        build(sources, config, partial)
        partial.replace(cached)
    count = install(cached, sources)
    print(f"native: {count} modules compiled ({cached})")


if __name__ == "__main__":
    main()
