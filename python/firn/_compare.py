"""The CPU and CUDA paths compared (firn_compare_backends, as `firn compare`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from . import _lib

STAGES = ("substep", "perturbed", "frames")


@dataclass(frozen=True)
class Difference:
    """One line of `firn compare`: a field compared element by element, or a
    scene statistic.

    name: the field ("x", "sph rho", "grid vel", ...) or statistic
    ("kinetic energy", "centre of mass x", a body's "pos y", ...).
    stage: "substep" (after the first substep from the scene's initial
    state), "perturbed" (after one substep from a perturbed state) or
    "frames" (the statistics after the frames).
    max_abs: the largest |gpu - cpu| (a field: over its elements, at element
    `worst`); scale: what it is measured against; rel = max_abs / scale,
    within `tolerance` when `ok`. A statistic has its two values `cpu` and
    `gpu` (None for a field); a field its `worst` element (None for a
    statistic, and when every element agrees exactly).
    """

    name: str
    stage: str
    statistic: bool
    max_abs: float
    scale: float
    rel: float
    tolerance: float
    ok: bool
    cpu: Optional[float] = None
    gpu: Optional[float] = None
    worst: Optional[int] = None


@dataclass(frozen=True)
class BackendComparison:
    """What firn_compare_backends reports (docs/CLI.md, "compare").

    `substep`, `perturbed` and `frames` map each name to its Difference in
    that stage; `entries` holds every Difference in the report's order (a
    rigid body and a tool of the same name give two "pos x" lines of one
    stage, which the maps hold one of). `ok` is whether every one is within
    its tolerance (`firn compare` prints PASS). `failures()` lists those
    that are not.
    """

    ok: bool
    particles: int
    dt: float
    frames_compared: int
    time: float
    state_tolerance: float
    stats_tolerance: float
    cpu_device: str
    gpu_device: str
    graph_captures: int
    graph_launches: int
    graphs_fell_back: Optional[str]
    substep: Dict[str, Difference] = field(default_factory=dict)
    perturbed: Dict[str, Difference] = field(default_factory=dict)
    frames: Dict[str, Difference] = field(default_factory=dict)
    entries: Tuple[Difference, ...] = ()

    def failures(self) -> List[Difference]:
        """The differences beyond their tolerance, in the report's order."""
        return [d for d in self.entries if not d.ok]


def from_report(r: _lib.CompareReport) -> BackendComparison:
    """A filled firn_compare_report as a BackendComparison (copied: the C
    report can be freed afterwards)."""
    stages: Dict[str, Dict[str, Difference]] = {s: {} for s in STAGES}
    entries: List[Difference] = []
    for k in range(r.n_entries):
        e = r.entries[k]
        stage = STAGES[e.stage] if 0 <= e.stage < len(STAGES) else str(e.stage)
        stat = bool(e.statistic)
        # A body's name is cut to fit the entry, maybe inside a UTF-8 sequence.
        name = e.name.decode(errors="replace")
        entries.append(Difference(
            name=name,
            stage=stage,
            statistic=stat,
            max_abs=e.max_abs,
            scale=e.scale,
            rel=e.rel,
            tolerance=e.tolerance,
            ok=bool(e.ok),
            cpu=e.cpu if stat else None,
            gpu=e.gpu if stat else None,
            worst=None if stat or e.worst < 0 else int(e.worst),
        ))
        stages.setdefault(stage, {}).setdefault(name, entries[-1])
    return BackendComparison(
        ok=bool(r.ok),
        particles=int(r.particles),
        dt=float(r.dt),
        frames_compared=int(r.frames),
        time=float(r.time),
        state_tolerance=float(r.state_tolerance),
        stats_tolerance=float(r.stats_tolerance),
        cpu_device=r.cpu_device.decode(errors="replace"),
        gpu_device=r.gpu_device.decode(errors="replace"),
        graph_captures=int(r.graph_captures),
        graph_launches=int(r.graph_launches),
        graphs_fell_back=r.graphs_why.decode(errors="replace") if r.graphs_fell_back else None,
        substep=stages["substep"],
        perturbed=stages["perturbed"],
        frames=stages["frames"],
        entries=tuple(entries),
    )
