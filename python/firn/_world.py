"""Worlds: stepping, state views, tools and kinematic bodies over firn.h."""

from __future__ import annotations

import ctypes
import math
import os
from ctypes import byref
from typing import Any, Iterator, Sequence

import numpy as np

from . import _lib
from ._compare import BackendComparison, from_report
from ._errors import ClosedError, UsageError, error_from
from ._scene import Scene
from ._views import FirnArray, Life, soa, soa_matrix, wrap

_lib_ = _lib.lib
_BACKENDS = {"auto": _lib.BACKEND_AUTO, "cpu": _lib.BACKEND_CPU, "cuda": _lib.BACKEND_CUDA}
_MOTIONS = {0: "static", 1: "kinematic", 2: "dynamic"}


class _Handle:
    """Owns one firn_world *; destroys it when the last reference goes."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int):
        self.ptr = ptr

    def __del__(self):
        ptr, self.ptr = self.ptr, None
        if ptr and _lib_ is not None:
            _lib_.firn_world_destroy(ptr)


def _to_py(value: Any) -> Any:
    if isinstance(value, ctypes.Structure):
        return {name: _to_py(getattr(value, name)) for name, _ in value._fields_}
    if isinstance(value, ctypes.Array):
        if isinstance(value, ctypes.Array) and value._type_ is ctypes.c_char:
            return value.value.decode()
        return [_to_py(v) for v in value]
    return value


def stats_dict(s: _lib.FrameStats) -> dict:
    """A firn_frame_stats as a dict (rigids and tools cut to the world's)."""
    d = _to_py(s)
    d["rigids"] = d["rigids"][: s.n_rigids]
    d["tools"] = d["tools"][: s.n_tools]
    return d


def _vec3(v: Sequence[float], what: str) -> ctypes.Array:
    a = np.asarray(v, dtype=np.float64).reshape(-1)
    if a.shape != (3,):
        raise UsageError(f"{what} needs 3 components, got {a.size}", 2)
    return _lib.f3(*(float(x) for x in a))


def _run_options(backend: str, p2g: str, grid: str, graphs: str) -> _lib.RunOptions:
    """firn_run_options of the names `firn run` takes (--backend, --p2g, --grid, --graphs)."""
    for what, value, names in (
        ("backend", backend, _BACKENDS),
        ("p2g", p2g, _lib.P2G),
        ("grid", grid, _lib.GRID),
        ("graphs", graphs, _lib.GRAPHS),
    ):
        if value not in names:
            raise ValueError(f"{what} must be one of {sorted(names)}, not {value!r}")
    return _lib.RunOptions(_BACKENDS[backend], _lib.P2G[p2g], _lib.GRID[grid], _lib.GRAPHS[graphs])


class World:
    """A simulated world of a Scene (firn_world), on backend "auto", "cpu" or "cuda".

    p2g, grid and graphs choose the CUDA path's variants as `firn run`'s
    options of those names do (firn_run_options; "auto" each by default).

    Stepping: `step(frames)` advances whole frames as `firn run` does,
    `substep(n, dt)` single substeps. Clocks: `frame`, `time`, `substeps`;
    `stats` is the last frame's statistics as a dict (stats.jsonl's
    fields). State: `mpm`, `sph`, `pbd`, `fem` (zero-copy NumPy views),
    `rigids[i]` and `tools[i]` (or by name). `close()` (or a `with` block)
    frees it; views made before a step or a close raise when used.
    """

    def __init__(
        self,
        scene: Scene,
        backend: str = "auto",
        *,
        p2g: str = "auto",
        grid: str = "auto",
        graphs: str = "auto",
        _ptr: int | None = None,
    ):
        if not isinstance(scene, Scene):
            raise TypeError("firn.World needs a firn.Scene (Scene.from_json or Scene.from_dict)")
        run = _run_options(backend, p2g, grid, graphs)
        self.scene = scene
        self._run = run
        if _ptr is None:
            err = _lib.Error()
            _ptr = _lib_.firn_world_create_with(byref(scene.raw), byref(run), byref(err))
            if not _ptr:
                raise error_from(err, path=scene.path)
        self._handle: _Handle | None = _Handle(_ptr)
        self._life = Life(self._handle)
        self._stats = _lib.FrameStats()
        self._stepped = False
        self._stats_dict: dict | None = None
        self._err = _lib.Error()
        self.mpm = MPM(self)
        self.sph = SPH(self)
        self.pbd = PBD(self)
        self.fem = FEM(self)
        self.rigids = _Bodies(self, Rigid, _lib_.firn_world_rigid_count(_ptr), scene.rigid_names)
        self.tools = _Bodies(self, Tool, _lib_.firn_world_tool_count(_ptr), scene.tool_names)

    @classmethod
    def load(
        cls,
        scene: Scene,
        path: str | os.PathLike,
        backend: str = "auto",
        *,
        p2g: str = "auto",
        grid: str = "auto",
        graphs: str = "auto",
    ) -> "World":
        """A world of `scene` at the state a checkpoint (World.save, `firn run
        --checkpoint-every`) holds; stepping it continues the saved run."""
        run = _run_options(backend, p2g, grid, graphs)
        err = _lib.Error()
        ptr = _lib_.firn_world_load_with(
            byref(scene.raw), byref(run), os.fsencode(os.fspath(path)), byref(err)
        )
        if not ptr:
            raise error_from(err, path=os.fspath(path))
        return cls(scene, backend, p2g=p2g, grid=grid, graphs=graphs, _ptr=ptr)

    # ---- lifetime ----------------------------------------------------------
    @property
    def _ptr(self) -> int:
        if self._handle is None:
            raise ClosedError("firn.World is closed")
        return self._handle.ptr

    @property
    def closed(self) -> bool:
        return self._handle is None

    def close(self) -> None:
        """Frees the world. Views of it raise ClosedError from now on (the C
        memory itself goes when the last of them does)."""
        if self._handle is not None:
            self._life.end("closed")
            self._handle = None

    def __enter__(self) -> "World":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _new_generation(self, why: str) -> None:
        self._life.end(why)
        self._life = Life(self._handle)

    def _check(self, rc: int) -> None:
        if rc:
            raise error_from(self._err, path=self.scene.path)

    # ---- any solver's fields by name ---------------------------------------
    def field_names(self, solver: str) -> list[str]:
        """The fields `field` reads for `solver` ("mpm", "sph", "pbd", "fem"):
        its solver's table (host/solver.h), the same names the C API takes."""
        ptr, out, k = self._ptr, [], 0
        while True:
            name = _lib_.firn_world_field_name(ptr, solver.encode(), k)
            if name is None:
                return out
            out.append(name.decode())
            k += 1

    def field(self, solver: str, name: str) -> FirnArray:
        """Any per-element array of a solver's state by name (firn_world_field):
        (n,) for one component, (n, c) for c; read-only, a zero-copy view of the
        host copy (downloaded first where stale), valid until the next step.
        Unknown names raise UsageError naming the ones that exist."""
        ptr, v = self._ptr, _lib.FieldView()
        self._check(_lib_.firn_world_field(ptr, solver.encode(), name.encode(), byref(v),
                                           byref(self._err)))
        dtype = np.uint8 if v.type == 1 else np.float32
        n, c = int(v.count), int(v.components)
        if c == 1:
            return wrap(self._life, v.data, dtype, (n,), writeable=False)
        return soa(self._life, v.data, n, c, False, dtype=dtype)

    # ---- stepping ----------------------------------------------------------
    def step(self, frames: int = 1) -> None:
        """Advances `frames` frames (each ceil(frame_dt / dt) substeps), as `firn run`.
        The last frame's statistics are then `world.stats`."""
        ptr = self._ptr
        if frames < 0:
            raise ValueError("frames must be >= 0")
        self._new_generation("step")
        fn, st, err = _lib_.firn_world_step_frame, byref(self._stats), byref(self._err)
        for _ in range(frames):
            if fn(ptr, st, err):
                raise error_from(self._err, path=self.scene.path)
        if frames:
            self._stepped, self._stats_dict = True, None

    def substep(self, n: int = 1, dt: float | None = None) -> None:
        """Advances n substeps of dt seconds (default: the next frame's substep,
        firn_world_next_frame_step). Substeps do not count frames."""
        ptr = self._ptr
        if n < 0:
            raise ValueError("n must be >= 0")
        if dt is None:
            dt = self.next_frame_step()[0]
        if not (math.isfinite(dt) and dt > 0):
            raise UsageError(f"substep: dt = {dt} is not a positive finite time", 2)
        self._new_generation("substep")
        if n:
            self._check(_lib_.firn_world_run_substeps(ptr, int(n), float(dt), byref(self._err)))

    def next_frame_step(self) -> tuple[float, int]:
        """(dt [s], substeps) of the next frame."""
        dt, n = ctypes.c_float(), ctypes.c_int()
        self._check(_lib_.firn_world_next_frame_step(self._ptr, byref(dt), byref(n), byref(self._err)))
        return float(dt.value), int(n.value)

    def _clock(self) -> tuple[int, float, int]:
        f, t, s = ctypes.c_int(), ctypes.c_double(), ctypes.c_longlong()
        _lib_.firn_world_clock(self._ptr, byref(f), byref(t), byref(s))
        return f.value, t.value, s.value

    @property
    def frame(self) -> int:
        """Frames stepped since the start (frame 0 is the initial state)."""
        return self._clock()[0]

    @property
    def time(self) -> float:
        """Simulated time [s]."""
        return self._clock()[1]

    @property
    def substeps(self) -> int:
        """Substeps since the start."""
        return self._clock()[2]

    @property
    def stats(self) -> dict | None:
        """The last step()'s frame statistics (firn_frame_stats) as a dict; None before one."""
        self._ptr
        if not self._stepped:
            return None
        if self._stats_dict is None:
            self._stats_dict = stats_dict(self._stats)
        return self._stats_dict

    def current_stats(self) -> dict:
        """Statistics of the current state (firn_world_stats; frame fields as they are)."""
        s = _lib.FrameStats()
        self._check(_lib_.firn_world_stats(self._ptr, byref(s), byref(self._err)))
        return stats_dict(s)

    # ---- backend, sync, files -----------------------------------------------
    @property
    def backend(self) -> str:
        return "cuda" if _lib_.firn_world_backend(self._ptr) == _lib.BACKEND_CUDA else "cpu"

    @property
    def device_name(self) -> str:
        name = _lib_.firn_world_device_name(self._ptr)
        return name.decode() if name else ""

    def sync(self) -> None:
        """Brings every host copy of the state up to date (on the CUDA path: downloads
        it). Views fetch what they show anyway; this is for timing the download."""
        self._check(_lib_.firn_world_host_state(self._ptr, byref(self._err)))

    def save(self, path: str | os.PathLike) -> None:
        """Writes a checkpoint (firn_world_save); World.load continues from it."""
        self._check(_lib_.firn_world_save(self._ptr, os.fsencode(os.fspath(path)), byref(self._err)))

    def write_ply(self, path: str | os.PathLike) -> None:
        """The MPM particles as a binary PLY (firn_write_ply)."""
        v = _lib.ParticlesView()
        self._check(_lib_.firn_world_particles(self._ptr, byref(v), byref(self._err)))
        self._check(_lib_.firn_write_ply(os.fsencode(os.fspath(path)), byref(v), byref(self._err)))

    def write_frame(self, dir: str | os.PathLike) -> None:
        """Writes the current frame into the existing folder `dir` as `firn run`
        writes a frame (firn_world_write_frame, by the CLI's own frame writer):
        frame_NNNNN.ply / .png, sph_, pbd_, fem_, rigids_ and tools_ files as the
        scene's output keys say (output.every does not apply), the ParaView time
        series beside them, then the frame's line appended to stats.jsonl. Stepped
        with step(), the line is the one `firn run` writes for that frame (up to
        its wall-clock fields); after substep() or a load it has the statistics
        of the current state.

        Raises FirnIOError for a missing folder, a path that is not a folder or
        one a running `firn run` holds; UsageError when its stats.jsonl already
        has this frame or a later one (frames are appended in order); ClosedError
        after close(). Nothing is written then, and nothing already there changes.
        """
        ptr = self._ptr
        f, _, n = self._clock()
        stats = byref(self._stats) if self._stepped and (self._stats.frame, self._stats.substeps) == (f, n) else None
        self._check(_lib_.firn_world_write_frame(ptr, os.fsencode(os.fspath(dir)), stats, byref(self._err)))

    def compare_backends(self, frames: int = 10) -> BackendComparison:
        """Runs this world's scene on the CPU path and on the CUDA backend, from
        its initial state, and compares them as `firn compare` does
        (firn_compare_backends_with, the CUDA world with this world's p2g,
        grid and graphs): every particle field and the grid after one
        substep, the particle fields after one substep from a perturbed state,
        and the scene statistics after `frames` frames (0: none). This world is
        not stepped or changed.

        Returns a BackendComparison: `ok`, and each field's or statistic's
        Difference by stage (`substep`, `perturbed`, `frames`). A difference
        beyond tolerance is reported (`ok` False), not raised. Raises
        DeviceError without a usable GPU or in a build without CUDA (the
        message of `firn compare`), UsageError for frames < 0, NumericError for
        a scene that blows up, ClosedError after close().
        """
        self._ptr
        if isinstance(frames, bool) or not isinstance(frames, int):
            raise TypeError(f"frames must be an int, not {type(frames).__name__}")
        r = _lib.CompareReport()
        if _lib_.firn_compare_backends_with(
            byref(self.scene.raw), byref(self._run), frames, byref(r), byref(self._err)
        ):
            raise error_from(self._err, path=self.scene.path)
        try:
            return from_report(r)
        finally:
            _lib_.firn_compare_report_free(byref(r))

    def __repr__(self) -> str:
        if self.closed:
            return "firn.World(closed)"
        return f"firn.World({self.scene.path!r}, backend={self.backend!r}, frame={self.frame})"


class _Field:
    """A view property of a solver (or a rigid body): the C view's pointer
    `field` as a FirnArray.

    layout "vec": (count, 3) over C's component-major block (soa); "mat":
    (count, 3, 3) (soa_matrix); "flat": (count, *shape) of dtype, or just
    `shape` when count is None. Writable only where `writable` and the
    owner's path allows it (the CPU path). Read-only as an attribute: the
    state is written through the array, not by assigning to the property.
    """

    def __init__(self, field: str, layout: str = "flat", dtype: type = np.float32,
                 shape: tuple = (), count: str | None = "n", writable: bool = False,
                 doc: str | None = None):
        self.field, self.layout, self.dtype = field, layout, dtype
        self.shape, self.count, self.writable = shape, count, writable
        self.__doc__ = doc

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, owner, cls=None):
        if owner is None:
            return self
        v, life, rw = owner._v()
        ptr, rw = getattr(v, self.field), rw and self.writable
        n = int(getattr(v, self.count)) if self.count else None
        if self.layout == "vec":
            return soa(life, ptr, n, 3, rw)
        if self.layout == "mat":
            return soa_matrix(life, ptr, n, rw)
        shape = self.shape if n is None else (n, *self.shape)
        return wrap(life, ptr, self.dtype, shape, writeable=rw)

    def __set__(self, owner, value) -> None:
        raise AttributeError(f"can't set attribute '{self.name}' (write through the view: .{self.name}[...] = ...)")


class _Solver:
    """A solver's state: `_VIEW` (the view struct) filled by `_FETCH` (its
    firn_world_* call)."""

    _VIEW: type
    _FETCH: str

    def __init__(self, world: World):
        self._world = world

    def _v(self):
        w = self._world
        v = self._VIEW()
        w._check(getattr(_lib_, self._FETCH)(w._ptr, byref(v), byref(w._err)))
        return v, w._life, w.backend == "cpu"

    @property
    def n(self) -> int:
        """Particles (vertices) of this solver."""
        return int(self._v()[0].n)


class MPM(_Solver):
    """The MPM particles (firn_world_particles), in the scene's order.

    Arrays are views of the C state, not copies: x, v are (n, 3), C and F
    (n, 3, 3), Jp, damage, vol (n,), material (n,) uint8. On the CPU path
    they are writable and a write changes the simulated state; on the CUDA
    path they show the host mirror (downloaded when fetched) and are
    read-only. Fetch them again after each step."""

    _VIEW, _FETCH = _lib.ParticlesView, "firn_world_particles"
    x = _Field("x", "vec", writable=True, doc="Positions [m], (n, 3).")
    v = _Field("v", "vec", writable=True, doc="Velocities [m/s], (n, 3).")
    C = _Field("C", "mat", writable=True, doc="Affine velocity fields (APIC) [1/s], (n, 3, 3).")
    F = _Field("F", "mat", writable=True, doc="Deformation gradients, (n, 3, 3).")
    Jp = _Field("Jp", writable=True, doc="Plastic state (snow: Jp; sand: volume correction), (n,).")
    damage = _Field("damage", writable=True, doc="Fracture damage in [0, 1], (n,).")
    vol = _Field("vol", doc="Initial volumes [m^3], (n,); read-only.")
    material = _Field("mat", dtype=np.uint8, doc="Material indices (the scene's order), (n,) uint8; read-only.")


class SPH(_Solver):
    """The SPH particles (firn_world_sph_particles): x, v (n, 3), density, pressure,
    material (n,). Writable on the CPU path (x, v), as MPM's."""

    _VIEW, _FETCH = _lib.SphParticlesView, "firn_world_sph_particles"
    x = _Field("x", "vec", writable=True, doc="Positions [m], (n, 3).")
    v = _Field("v", "vec", writable=True, doc="Velocities [m/s], (n, 3).")
    density = _Field("rho", doc="Densities [kg/m^3], (n,); read-only.")
    pressure = _Field("p", doc="Pressures [Pa], (n,); read-only.")
    material = _Field("mat", dtype=np.uint8, doc="Material indices, (n,) uint8; read-only.")


class PBD(_Solver):
    """The PBD particles (firn_world_pbd_particles): x, v (n, 3), inverse_mass,
    material (n,), triangles (m, 3) int32. x, v writable on the CPU path."""

    _VIEW, _FETCH = _lib.PbdParticlesView, "firn_world_pbd_particles"
    x = _Field("x", "vec", writable=True, doc="Positions [m], (n, 3).")
    v = _Field("v", "vec", writable=True, doc="Velocities [m/s], (n, 3).")
    inverse_mass = _Field("w", doc="Inverse masses [1/kg] (0: pinned), (n,); read-only.")
    material = _Field("mat", dtype=np.uint8, doc="Material indices, (n,) uint8; read-only.")
    triangles = _Field("tri", dtype=np.int32, shape=(3,), count="triangles",
                       doc="Cloth triangles (particle indices), (m, 3) int32; read-only.")


class FEM(_Solver):
    """The FEM bodies' mesh (firn_world_fem_mesh): vertices x, v (n, 3), fixed (n,);
    elements tets (m, 4), material (m,), stress and strain (m, 6: xx yy zz xy yz xz),
    von_mises (m,) computed from the current positions when fetched. x, v writable
    on the CPU path."""

    _VIEW, _FETCH = _lib.FemMeshView, "firn_world_fem_mesh"
    x = _Field("x", "vec", writable=True, doc="Vertex positions [m], (n, 3).")
    v = _Field("v", "vec", writable=True, doc="Vertex velocities [m/s], (n, 3).")
    fixed = _Field("fixed", dtype=np.uint8, doc="1 for a fixed vertex, (n,) uint8; read-only.")
    tets = _Field("tet", dtype=np.int32, shape=(4,), count="elements",
                  doc="Tetrahedra (vertex indices), (m, 4) int32; read-only.")
    material = _Field("mat", dtype=np.uint8, count="elements", doc="Element materials, (m,) uint8; read-only.")
    stress = _Field("stress", shape=(6,), count="elements",
                    doc="Cauchy stress [Pa] per element, (m, 6: xx yy zz xy yz xz); read-only.")
    strain = _Field("strain", shape=(6,), count="elements",
                    doc="Green strain per element, (m, 6: xx yy zz xy yz xz); read-only.")
    von_mises = _Field("von_mises", count="elements", doc="Von Mises stress [Pa] per element, (m,); read-only.")


class _Bodies(Sequence):
    """world.rigids / world.tools: by index or by name."""

    def __init__(self, world: World, cls, count: int, names: list[str]):
        self._items = [cls(world, k, names[k] if k < len(names) else str(k)) for k in range(count)]

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, key):
        if isinstance(key, str):
            for item in self._items:
                if item.name == key:
                    return item
            raise KeyError(f"no body called {key!r} (there are {[i.name for i in self._items]})")
        return self._items[key]

    def __iter__(self) -> Iterator:
        return iter(self._items)


class Rigid:
    """Rigid body `index` of the scene: position (3,), quaternion (4: w x y z),
    velocity, angular_velocity (3,) are read-only views of the C state (the CUDA
    path's host mirror, downloaded when fetched). A kinematic body is commanded
    with set_velocity."""

    def __init__(self, world: World, index: int, name: str):
        self._world, self.index, self.name = world, index, name

    def _v(self):
        w = self._world
        v = _lib.RigidView()
        w._check(_lib_.firn_world_rigid_view(w._ptr, self.index, byref(v), byref(w._err)))
        return v, w._life, False

    @property
    def motion(self) -> str:
        """"static", "kinematic" or "dynamic"."""
        return _MOTIONS.get(self._v()[0].motion, "?")

    position = _Field("position", shape=(3,), count=None, doc="Centre of mass [m], (3,).")
    quaternion = _Field("orientation", shape=(4,), count=None, doc="Orientation, unit quaternion (w, x, y, z).")
    velocity = _Field("velocity", shape=(3,), count=None, doc="Velocity [m/s], (3,).")
    angular_velocity = _Field("angular_velocity", shape=(3,), count=None,
                              doc="Angular velocity [rad/s, world frame], (3,).")

    def set_velocity(self, v: Sequence[float], omega: Sequence[float] = (0.0, 0.0, 0.0)) -> None:
        """Commands a kinematic body's velocity [m/s] and angular velocity [rad/s,
        world frame] from the next substep on (firn_world_set_rigid_velocity).
        Static and dynamic bodies and non-finite components are refused
        (UsageError) and nothing changes."""
        w = self._world
        w._check(
            _lib_.firn_world_set_rigid_velocity(
                w._ptr, self.index, _vec3(v, "v"), _vec3(omega, "omega"), byref(w._err)
            )
        )

    def __repr__(self) -> str:
        return f"firn.Rigid({self.index}, {self.name!r})"


def _state_vector(field: str, doc: str) -> property:
    """A Tool property: firn_tool_state's `field` as a float32 array (a copy)."""
    return property(lambda tool: np.array(getattr(tool._state(), field), dtype=np.float32), doc=doc)


class Tool:
    """Tool `index` of the scene (docs/PHYSICS.md s4.8): commanded with
    set_velocity; `state` (firn_tool_state as a dict), and `force` (the last
    substep's), `force_mean` (over the last frame) the material's force on it [N]."""

    def __init__(self, world: World, index: int, name: str):
        self._world, self.index, self.name = world, index, name

    def _state(self) -> _lib.ToolState:
        w = self._world
        s = _lib.ToolState()
        if _lib_.firn_world_tool_state(w._ptr, self.index, byref(s)):
            raise UsageError(f"no tool {self.index}", 2)
        return s

    @property
    def state(self) -> dict:
        return _to_py(self._state())

    position = _state_vector("position", "Position [m] (a copy), (3,).")
    quaternion = _state_vector("orientation", "Orientation, unit quaternion (w, x, y, z) (a copy).")
    velocity = _state_vector("velocity", "Commanded velocity [m/s] (a copy), (3,).")
    force = _state_vector("force", "The material's force on the tool over the last substep [N] (a copy).")
    force_mean = _state_vector("force_mean", "The material's mean force on the tool over the last frame [N].")
    torque = _state_vector("torque", "The material's torque on the tool over the last substep [N m].")

    def set_velocity(self, v: Sequence[float], omega: Sequence[float] = (0.0, 0.0, 0.0)) -> None:
        """Commands the tool's velocity [m/s] and angular velocity [rad/s, world frame]
        from the next substep on (firn_world_set_tool_velocity); a NaN is refused
        (UsageError) and nothing changes."""
        w = self._world
        w._check(
            _lib_.firn_world_set_tool_velocity(
                w._ptr, self.index, _vec3(v, "v"), _vec3(omega, "omega"), byref(w._err)
            )
        )

    def __repr__(self) -> str:
        return f"firn.Tool({self.index}, {self.name!r})"
