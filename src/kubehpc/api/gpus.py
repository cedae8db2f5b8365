"""The GPU models kubehpc knows, with their MIG profile tables.

Facts come from NVIDIA's Multi-Instance GPU user guide ("Supported MIG Profiles" and the
``nvidia-smi mig -lgip`` / ``-lgipp`` listings it shows):

* A MIG-capable GPU of the A100/H100/H200 family has 7 compute slices and 8 memory slices.
* A GPU instance profile ``<c>g.<m>gb`` takes ``c`` compute slices and a run of memory slices;
  ``nvidia-smi mig -lgipp`` lists where it may start, in memory-slice units:

  ====================  ==================  =====  ==============
  profile (A100-40GB)   starts              size   max instances
  ====================  ==================  =====  ==============
  1g.5gb                0,1,2,3,4,5,6       1      7
  1g.5gb+me             0,1,2,3,4,5,6       1      1
  1g.10gb               0,2,4,6             2      4
  2g.10gb               0,2,4               2      3
  3g.20gb               0,4                 4      2
  4g.20gb               0                   4      1
  7g.40gb               0                   8      1
  ====================  ==================  =====  ==============

  A100-80GB, H100-80GB and H200-141GB have the same geometry; only the memory in the names
  differs (1g.10gb/1g.20gb/2g.20gb/3g.40gb/4g.40gb/7g.80gb on 80 GB parts, 1g.18gb/1g.35gb/
  2g.35gb/3g.71gb/4g.71gb/7g.141gb on H200).

A layout is valid when every instance starts at one of its profile's starts, no two instances
share a memory slice, no profile exceeds its instance limit and the compute slices add up to
at most 7. Memory figures are the nominal sizes in the profile names (what users request);
the driver reports slightly less usable memory per instance.

Pure data and functions: the scheduler may import this module.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

MIB_PER_GB = 1024
COMPUTE_SLICES = 7
MEMORY_SLICES = 8


@dataclass(frozen=True)
class MigProfile:
    """One GPU instance profile of one GPU model."""

    name: str  # "1g.10gb", "1g.10gb+me"
    compute_slices: int
    memory_gb: int  # nominal, from the name
    starts: tuple[int, ...]  # valid first memory slice of an instance
    size: int  # memory slices an instance occupies
    max_instances: int
    media_extensions: bool = False

    @property
    def memory_mib(self) -> int:
        return self.memory_gb * MIB_PER_GB

    @property
    def resource_suffix(self) -> str:
        """The profile as it appears in a resource name: the device plugin spells ``+`` as ``.``."""
        return self.name.replace("+", ".")

    def slices(self, start: int) -> range:
        return range(start, start + self.size)


@dataclass(frozen=True)
class GpuModel:
    name: str  # catalogue key, as written in cluster configs: "H100-80GB"
    product: str  # what NVML reports and GFD labels nvidia.com/gpu.product with
    memory_mib: int
    family: str  # GFD nvidia.com/gpu.family
    compute_major: int
    compute_minor: int
    mig_profiles: tuple[MigProfile, ...] = ()

    @property
    def mig_capable(self) -> bool:
        return bool(self.mig_profiles)

    def mig_profile(self, name: str) -> MigProfile | None:
        for p in self.mig_profiles:
            if p.name == name:
                return p
        return None


def _ampere_hopper_profiles(m1: int, m2: int, m3: int, m7: int) -> tuple[MigProfile, ...]:
    """The A100/H100/H200 profile geometry; ``m1`` etc. are the nominal GB of 1g, 1g-double
    (= 2g), 3g (= 4g) and 7g instances, which is all that differs between the models."""
    return (
        MigProfile(f"1g.{m1}gb", 1, m1, (0, 1, 2, 3, 4, 5, 6), 1, 7),
        MigProfile(f"1g.{m1}gb+me", 1, m1, (0, 1, 2, 3, 4, 5, 6), 1, 1, media_extensions=True),
        MigProfile(f"1g.{m2}gb", 1, m2, (0, 2, 4, 6), 2, 4),
        MigProfile(f"2g.{m2}gb", 2, m2, (0, 2, 4), 2, 3),
        MigProfile(f"3g.{m3}gb", 3, m3, (0, 4), 4, 2),
        MigProfile(f"4g.{m3}gb", 4, m3, (0,), 4, 1),
        MigProfile(f"7g.{m7}gb", 7, m7, (0,), 8, 1),
    )


CATALOGUE: dict[str, GpuModel] = {
    m.name: m
    for m in (
        GpuModel(
            "A100-40GB",
            "NVIDIA-A100-SXM4-40GB",
            40960,
            "ampere",
            8,
            0,
            _ampere_hopper_profiles(5, 10, 20, 40),
        ),
        GpuModel(
            "A100-80GB",
            "NVIDIA-A100-SXM4-80GB",
            81920,
            "ampere",
            8,
            0,
            _ampere_hopper_profiles(10, 20, 40, 80),
        ),
        GpuModel(
            "H100-80GB",
            "NVIDIA-H100-80GB-HBM3",
            81920,
            "hopper",
            9,
            0,
            _ampere_hopper_profiles(10, 20, 40, 80),
        ),
        GpuModel(
            "H200-141GB",
            "NVIDIA-H200-141GB-HBM3e",
            144384,
            "hopper",
            9,
            0,
            _ampere_hopper_profiles(18, 35, 71, 141),
        ),
        GpuModel("V100-16GB", "Tesla-V100-SXM2-16GB", 16384, "volta", 7, 0),
        GpuModel("V100-32GB", "Tesla-V100-SXM2-32GB", 32768, "volta", 7, 0),
        GpuModel("T4", "Tesla-T4", 15360, "turing", 7, 5),
        GpuModel("A10", "NVIDIA-A10", 23028, "ampere", 8, 6),
        GpuModel("L4", "NVIDIA-L4", 23034, "ada-lovelace", 8, 9),
        GpuModel("L40S", "NVIDIA-L40S", 46068, "ada-lovelace", 8, 9),
        GpuModel("RTX-4090", "NVIDIA-GeForce-RTX-4090", 24564, "ada-lovelace", 8, 9),
    )
}

# Extra spellings users write in cluster configs, mapped to catalogue keys.
_ALIASES = {
    "A100": "A100-40GB",
    "A100-SXM4-40GB": "A100-40GB",
    "A100-SXM4-80GB": "A100-80GB",
    "H100": "H100-80GB",
    "H100-SXM5-80GB": "H100-80GB",
    "H200": "H200-141GB",
    "V100": "V100-16GB",
}


def gpu_model(name: str) -> GpuModel | None:
    """The catalogue entry for a model name (case-insensitive; a few aliases accepted)."""
    by_upper = {k.upper(): v for k, v in CATALOGUE.items()}
    key = name.strip().upper()
    if key in by_upper:
        return by_upper[key]
    alias = {k.upper(): v for k, v in _ALIASES.items()}.get(key)
    return CATALOGUE[alias] if alias else None


def model_from_product(product: str, memory_mib: int) -> GpuModel | None:
    """Match what NVML reports ("NVIDIA H100 80GB HBM3") to a catalogue entry, so a real GPU
    gets its MIG table; None for GPUs we have no table for."""
    words = set(product.upper().replace("-", " ").split())
    best: GpuModel | None = None
    for model in CATALOGUE.values():
        family, _, mem = model.name.upper().partition("-")
        if family not in words and model.product.upper().replace("-", " ") != " ".join(
            product.upper().split()
        ):
            continue
        # Memory tells 40GB from 80GB parts; NVML reports a little less or more than nominal.
        if mem.endswith("GB") and abs(int(mem[:-2]) * 1024 - memory_mib) > 8 * 1024:
            continue
        best = model
        break
    return best


@dataclass(frozen=True)
class MigPlacement:
    profile: MigProfile
    start: int


class MigLayoutError(ValueError):
    """A layout that cannot exist on the GPU; the message says why."""


def _parse_entry(model: GpuModel, entry: str) -> tuple[MigProfile, int | None]:
    name, _, at = entry.partition("@")
    profile = model.mig_profile(name.strip())
    if profile is None:
        known = ", ".join(p.name for p in model.mig_profiles) or "none (not MIG-capable)"
        raise MigLayoutError(f'{model.name} has no MIG profile "{name.strip()}"; known: {known}')
    if not at:
        return profile, None
    try:
        start = int(at)
    except ValueError:
        raise MigLayoutError(f'"{entry}": the placement after @ must be a slice number') from None
    if start not in profile.starts:
        starts = ",".join(str(s) for s in profile.starts)
        raise MigLayoutError(f'"{entry}": {profile.name} can start only at memory slice {{{starts}}}')
    return profile, start


def plan_mig_layout(model: GpuModel, entries: Sequence[str]) -> tuple[MigPlacement, ...]:
    """Place the instances ``entries`` names (``"3g.40gb"`` or ``"3g.40gb@4"``) on one GPU.

    Instances without an explicit ``@start`` get the first free valid start, largest first
    (which finds a placement whenever one exists for these small tables: we backtrack).
    Raises :class:`MigLayoutError` for an impossible layout.
    """
    if not model.mig_capable:
        raise MigLayoutError(f"{model.name} does not support MIG")
    parsed = [_parse_entry(model, e) for e in entries]
    counts: dict[str, int] = {}
    for profile, _ in parsed:
        counts[profile.name] = counts.get(profile.name, 0) + 1
        if counts[profile.name] > profile.max_instances:
            raise MigLayoutError(
                f"{model.name} allows at most {profile.max_instances} {profile.name} instance(s) per GPU"
            )
    compute = sum(p.compute_slices for p, _ in parsed)
    if compute > COMPUTE_SLICES:
        raise MigLayoutError(
            f"the layout needs {compute} compute slices; one {model.name} has {COMPUTE_SLICES}"
        )
    used: set[int] = set()
    fixed: list[MigPlacement] = []
    for profile, start in parsed:
        if start is None:
            continue
        span = set(profile.slices(start))
        if span & used:
            raise MigLayoutError(f"{profile.name}@{start} overlaps another instance's memory slices")
        used |= span
        fixed.append(MigPlacement(profile, start))
    free = sorted((p for p, s in parsed if s is None), key=lambda p: (-p.size, -p.compute_slices, p.name))
    placed = _backtrack(free, used)
    if placed is None:
        raise MigLayoutError(
            f"the instances {', '.join(entries)} do not fit on one {model.name}: "
            "their memory slices cannot be placed without overlapping"
        )
    return tuple(sorted(fixed + placed, key=lambda pl: pl.start))


def _backtrack(todo: list[MigProfile], used: set[int]) -> list[MigPlacement] | None:
    if not todo:
        return []
    profile, rest = todo[0], todo[1:]
    for start in profile.starts:
        span = set(profile.slices(start))
        if span & used:
            continue
        tail = _backtrack(rest, used | span)
        if tail is not None:
            return [MigPlacement(profile, start), *tail]
    return None


def profile_names(models: Iterable[GpuModel]) -> list[str]:
    return sorted({p.name for m in models for p in m.mig_profiles})
