"""The ctypes layer: loading libfirn.so and mirrors of firn.h's structs.

Every mirrored struct is checked against the library's own sizeof
(firn_struct_size) when the library is loaded, so that a firn.h and a
Python package out of step fail at import with a message instead of
reading memory wrongly.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from ctypes import (
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_double,
    c_float,
    c_int,
    c_longlong,
    c_size_t,
    c_uint8,
    c_uint64,
    c_void_p,
)
from pathlib import Path

MAX_MATERIALS = 16
MAX_BODIES = 64
MAX_RIGIDS = 16
MAX_KEYFRAMES = 32
MAX_TOOLS = 8
NAME_MAX = 64
PATH_MAX = 512
ERRMSG_MAX = 1024
MAX_PINS = 256

f3 = c_float * 3
f4 = c_float * 4
d3 = c_double * 3


class Error(Structure):
    _fields_ = [("code", c_int), ("msg", c_char * ERRMSG_MAX)]


class WallDef(Structure):
    _fields_ = [("type", c_int), ("friction", c_float)]


class MaterialDef(Structure):
    _fields_ = [
        ("name", c_char * NAME_MAX),
        ("model", c_int),
        ("law", c_int),
        ("E", c_float),
        ("nu", c_float),
        ("density", c_float),
        ("theta_c", c_float),
        ("theta_s", c_float),
        ("hardening", c_float),
        ("max_hardening", c_float),
        ("friction_angle", c_float),
        ("yield_stress", c_float),
        ("crit_strain", c_float),
        ("damage_rate", c_float),
        ("stiffness", c_float),
        ("exponent", c_float),
        ("viscosity", c_float),
        ("surface_tension", c_float),
        ("pressure_solver", c_int),
        ("cone_fit", c_int),
        ("rheology", c_int),
        ("friction_angle_2", c_float),
        ("inertial_I0", c_float),
        ("grain_diameter", c_float),
        ("grain_density", c_float),
        ("stretch_compliance", c_float),
        ("bending_compliance", c_float),
        ("air_resistance", c_float),
        ("static_friction", c_float),
        ("kinetic_friction", c_float),
        ("density_relaxation", c_float),
        ("viscosity_relaxation", c_float),
    ]


class ShapeDef(Structure):
    _fields_ = [
        ("type", c_int),
        ("center", f3),
        ("size", f3),
        ("radius", c_float),
        ("height", c_float),
        ("axis", c_int),
        ("resolution", c_int * 2),
        ("file", c_char * PATH_MAX),
        ("scale", c_float),
        ("cells", c_int * 3),
    ]


class BodyDef(Structure):
    _fields_ = [
        ("material", c_int),
        ("solver", c_int),
        ("shape", ShapeDef),
        ("particles_per_cell", c_float),
        ("velocity", f3),
        ("seed", c_uint64),
        ("n_pins", c_int),
        ("pins", c_int * MAX_PINS),
        ("pin_box", c_int),
        ("pin_lower", f3),
        ("pin_upper", f3),
        ("fem_implicit", c_int),
    ]


class RigidShapeDef(Structure):
    _fields_ = [
        ("type", c_int),
        ("center", f3),
        ("size", f3),
        ("radius", c_float),
        ("height", c_float),
        ("axis", c_int),
        ("normal", f3),
        ("file", c_char * PATH_MAX),
        ("scale", c_float),
    ]


class KeyframeDef(Structure):
    _fields_ = [("t", c_float), ("position", f3), ("rotation", f3)]


class RigidDef(Structure):
    _fields_ = [
        ("name", c_char * NAME_MAX),
        ("shape", RigidShapeDef),
        ("motion", c_int),
        ("rotation", f3),
        ("density", c_float),
        ("velocity", f3),
        ("angular_velocity", f3),
        ("friction", c_float),
        ("softness", c_float),
        ("restitution", c_float),
        ("couple", c_int),
        ("n_keyframes", c_int),
        ("keyframes", KeyframeDef * MAX_KEYFRAMES),
    ]


class ToolDef(Structure):
    _fields_ = [
        ("name", c_char * NAME_MAX),
        ("shape", RigidShapeDef),
        ("rotation", f3),
        ("velocity", f3),
        ("angular_velocity", f3),
        ("friction", c_float),
        ("softness", c_float),
        ("collision", c_int),
        ("n_keyframes", c_int),
        ("keyframes", KeyframeDef * MAX_KEYFRAMES),
    ]


class CouplingDef(Structure):
    _fields_ = [
        ("rigid_mpm", c_int),
        ("cpic", c_int),
        ("mpm_sph", c_int),
        ("sph_rigid", c_int),
        ("pbd_rigid", c_int),
        ("mpm_pbd", c_int),
        ("tool_mpm", c_int),
        ("fem_rigid", c_int),
        ("fem_mpm", c_int),
        ("fem_sph", c_int),
    ]


class SphDef(Structure):
    _fields_ = [
        ("particle_size", c_float),
        ("lower", f3),
        ("upper", f3),
        ("divergence_error", c_float),
        ("density_error", c_float),
        ("divergence_iterations", c_int),
        ("density_iterations", c_int),
        ("lattice_genesis", c_int),
        ("walls_clamp", c_int),
    ]


class PbdDef(Structure):
    _fields_ = [
        ("particle_size", c_float),
        ("stretch_iterations", c_int),
        ("bending_iterations", c_int),
        ("density_iterations", c_int),
        ("viscosity_iterations", c_int),
        ("lower", f3),
        ("upper", f3),
    ]


class FemDef(Structure):
    _fields_ = [("damping", c_float)]


class SceneDef(Structure):
    _fields_ = [
        ("lower", f3),
        ("upper", f3),
        ("dx", c_float),
        ("walls", WallDef * 6),
        ("gravity", f3),
        ("frame_dt", c_float),
        ("frames", c_int),
        ("cfl", c_float),
        ("dt", c_float),
        ("force_dt", c_int),
        ("n_materials", c_int),
        ("materials", MaterialDef * MAX_MATERIALS),
        ("n_bodies", c_int),
        ("bodies", BodyDef * MAX_BODIES),
        ("n_rigids", c_int),
        ("rigids", RigidDef * MAX_RIGIDS),
        ("n_tools", c_int),
        ("tools", ToolDef * MAX_TOOLS),
        ("coupling", CouplingDef),
        ("sph", SphDef),
        ("pbd", PbdDef),
        ("fem", FemDef),
        ("out_dir", c_char * PATH_MAX),
        ("out_every", c_int),
        ("write_ply", c_int),
        ("write_preview", c_int),
        ("source", c_char * PATH_MAX),
    ]


class RigidStats(Structure):
    _fields_ = [
        ("position", f3),
        ("orientation", f4),
        ("velocity", f3),
        ("angular_velocity", f3),
        ("force", f3),
        ("torque", f3),
    ]


class ToolState(Structure):
    _fields_ = [
        ("position", f3),
        ("orientation", f4),
        ("velocity", f3),
        ("angular_velocity", f3),
        ("force", f3),
        ("torque", f3),
        ("force_mean", f3),
        ("torque_mean", f3),
        ("impulse", d3),
        ("angular_impulse", d3),
    ]


class SphFrameStats(Structure):
    _fields_ = [
        ("particles", c_longlong),
        ("mass", c_double),
        ("kinetic_energy", c_double),
        ("momentum", d3),
        ("center_of_mass", d3),
        ("bbox_lower", f3),
        ("bbox_upper", f3),
        ("mean_density", c_double),
        ("max_density_ratio", c_double),
        ("mean_pressure", c_double),
        ("divergence_iterations", c_int),
        ("density_iterations", c_int),
    ]


class PbdFrameStats(Structure):
    _fields_ = [
        ("particles", c_longlong),
        ("pinned", c_longlong),
        ("edges", c_longlong),
        ("bends", c_longlong),
        ("mass", c_double),
        ("kinetic_energy", c_double),
        ("momentum", d3),
        ("center_of_mass", d3),
        ("bbox_lower", f3),
        ("bbox_upper", f3),
        ("max_strain", c_double),
        ("liquid", c_longlong),
        ("density_error", c_double),
    ]


class FemFrameStats(Structure):
    _fields_ = [
        ("vertices", c_longlong),
        ("elements", c_longlong),
        ("fixed", c_longlong),
        ("surface_triangles", c_longlong),
        ("mass", c_double),
        ("kinetic_energy", c_double),
        ("elastic_energy", c_double),
        ("momentum", d3),
        ("center_of_mass", d3),
        ("bbox_lower", f3),
        ("bbox_upper", f3),
        ("max_von_mises", c_double),
    ]


class FrameStats(Structure):
    _fields_ = [
        ("frame", c_int),
        ("time", c_double),
        ("substeps", c_longlong),
        ("frame_substeps", c_int),
        ("dt", c_float),
        ("particles", c_longlong),
        ("kinetic_energy", c_double),
        ("momentum", d3),
        ("center_of_mass", d3),
        ("bbox_lower", f3),
        ("bbox_upper", f3),
        ("mass", c_double),
        ("material_count", c_longlong * MAX_MATERIALS),
        ("wall_seconds", c_double),
        ("throughput", c_double),
        ("n_rigids", c_int),
        ("rigids", RigidStats * MAX_RIGIDS),
        ("sph", SphFrameStats),
        ("pbd", PbdFrameStats),
        ("fem", FemFrameStats),
        ("n_tools", c_int),
        ("tools", ToolState * MAX_TOOLS),
    ]


c_float_p = POINTER(c_float)
c_uint8_p = POINTER(c_uint8)
c_int_p = POINTER(c_int)


class ParticlesView(Structure):
    _fields_ = [
        ("n", c_longlong),
        ("x", c_float_p),
        ("v", c_float_p),
        ("C", c_float_p),
        ("F", c_float_p),
        ("Jp", c_float_p),
        ("damage", c_float_p),
        ("vol", c_float_p),
        ("mat", c_uint8_p),
    ]


class SphParticlesView(Structure):
    _fields_ = [
        ("n", c_longlong),
        ("x", c_float_p),
        ("v", c_float_p),
        ("rho", c_float_p),
        ("p", c_float_p),
        ("mat", c_uint8_p),
    ]


class PbdParticlesView(Structure):
    _fields_ = [
        ("n", c_longlong),
        ("x", c_float_p),
        ("v", c_float_p),
        ("w", c_float_p),
        ("mat", c_uint8_p),
        ("triangles", c_longlong),
        ("tri", c_int_p),
    ]


class FemMeshView(Structure):
    _fields_ = [
        ("n", c_longlong),
        ("x", c_float_p),
        ("v", c_float_p),
        ("fixed", c_uint8_p),
        ("elements", c_longlong),
        ("tet", c_int_p),
        ("mat", c_uint8_p),
        ("stress", c_float_p),
        ("strain", c_float_p),
        ("von_mises", c_float_p),
        ("triangles", c_longlong),
        ("tri", c_int_p),
    ]


class FieldView(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("type", c_int),
        ("components", c_int),
        ("count", c_longlong),
    ]


class RigidView(Structure):
    _fields_ = [
        ("position", c_float_p),
        ("orientation", c_float_p),
        ("velocity", c_float_p),
        ("angular_velocity", c_float_p),
        ("motion", c_int),
    ]


class CompareEntry(Structure):
    _fields_ = [
        ("name", c_char * 48),
        ("stage", c_int),
        ("statistic", c_int),
        ("cpu", c_double),
        ("gpu", c_double),
        ("max_abs", c_double),
        ("scale", c_double),
        ("rel", c_double),
        ("tolerance", c_double),
        ("worst", c_longlong),
        ("ok", c_int),
    ]


class CompareReport(Structure):
    _fields_ = [
        ("ok", c_int),
        ("particles", c_longlong),
        ("dt", c_float),
        ("frames", c_int),
        ("time", c_double),
        ("state_tolerance", c_double),
        ("stats_tolerance", c_double),
        ("cpu_device", c_char * 256),
        ("gpu_device", c_char * 256),
        ("graph_captures", c_longlong),
        ("graph_launches", c_longlong),
        ("graphs_fell_back", c_int),
        ("graphs_why", c_char * ERRMSG_MAX),
        ("n_entries", c_int),
        ("entries", POINTER(CompareEntry)),
    ]


class RunOptions(Structure):
    _fields_ = [("backend", c_int), ("p2g", c_int), ("grid", c_int), ("graphs", c_int)]


# firn_p2g_variant, firn_grid_mode, firn_graph_mode by their CLI names
P2G = {"atomic": 0, "binned": 1, "auto": 2, "warp": 3, "ordered": 4, "g2p2g": 5}
GRID = {"auto": 0, "dense": 1, "sparse": 2}
GRAPHS = {"auto": 0, "off": 1, "on": 2}

MIRRORS = {
    "firn_scene_def": SceneDef,
    "firn_run_options": RunOptions,
    "firn_coupling_def": CouplingDef,
    "firn_sph_def": SphDef,
    "firn_pbd_def": PbdDef,
    "firn_fem_def": FemDef,
    "firn_frame_stats": FrameStats,
    "firn_tool_state": ToolState,
    "firn_particles_view": ParticlesView,
    "firn_sph_particles_view": SphParticlesView,
    "firn_pbd_particles_view": PbdParticlesView,
    "firn_fem_mesh_view": FemMeshView,
    "firn_rigid_view": RigidView,
    "firn_field_view": FieldView,
    "firn_error": Error,
    "firn_compare_entry": CompareEntry,
    "firn_compare_report": CompareReport,
}

BACKEND_AUTO, BACKEND_CPU, BACKEND_CUDA = 0, 1, 2

_W = c_void_p  # firn_world *
_S = POINTER(SceneDef)
_E = POINTER(Error)

# name: (restype, argtypes)
_SIGNATURES = {
    "firn_struct_size": (c_size_t, [c_char_p]),
    "firn_scene_default": (None, [_S]),
    "firn_scene_load_json": (c_int, [c_char_p, _S, _E]),
    "firn_scene_parse_json": (c_int, [c_char_p, c_char_p, _S, _E]),
    "firn_scene_validate": (c_int, [_S, _E]),
    "firn_world_create": (_W, [_S, c_int, _E]),
    "firn_world_load": (_W, [_S, c_int, c_char_p, _E]),
    "firn_world_create_with": (_W, [_S, POINTER(RunOptions), _E]),
    "firn_world_load_with": (_W, [_S, POINTER(RunOptions), c_char_p, _E]),
    "firn_world_destroy": (None, [_W]),
    "firn_world_backend": (c_int, [_W]),
    "firn_world_device_name": (c_char_p, [_W]),
    "firn_world_save": (c_int, [_W, c_char_p, _E]),
    "firn_world_step_frame": (c_int, [_W, POINTER(FrameStats), _E]),
    "firn_world_run_substeps": (c_int, [_W, c_int, c_float, _E]),
    "firn_world_substep": (c_int, [_W, c_float, _E]),
    "firn_world_next_frame_step": (c_int, [_W, POINTER(c_float), POINTER(c_int), _E]),
    "firn_world_stats": (c_int, [_W, POINTER(FrameStats), _E]),
    "firn_world_host_state": (c_int, [_W, _E]),
    "firn_world_clock": (None, [_W, POINTER(c_int), POINTER(c_double), POINTER(c_longlong)]),
    "firn_world_particles": (c_int, [_W, POINTER(ParticlesView), _E]),
    "firn_world_sph_particles": (c_int, [_W, POINTER(SphParticlesView), _E]),
    "firn_world_pbd_particles": (c_int, [_W, POINTER(PbdParticlesView), _E]),
    "firn_world_fem_mesh": (c_int, [_W, POINTER(FemMeshView), _E]),
    "firn_world_field": (c_int, [_W, c_char_p, c_char_p, POINTER(FieldView), _E]),
    "firn_world_field_name": (c_char_p, [_W, c_char_p, c_int]),
    "firn_world_rigid_count": (c_int, [_W]),
    "firn_world_rigid_view": (c_int, [_W, c_int, POINTER(RigidView), _E]),
    "firn_world_set_rigid_velocity": (c_int, [_W, c_int, f3, f3, _E]),
    "firn_world_tool_count": (c_int, [_W]),
    "firn_world_tool_index": (c_int, [_W, c_char_p]),
    "firn_world_set_tool_velocity": (c_int, [_W, c_int, f3, f3, _E]),
    "firn_world_tool_state": (c_int, [_W, c_int, POINTER(ToolState)]),
    "firn_write_ply": (c_int, [c_char_p, POINTER(ParticlesView), _E]),
    "firn_world_write_frame": (c_int, [_W, c_char_p, POINTER(FrameStats), _E]),
    "firn_compare_backends": (c_int, [_S, c_int, POINTER(CompareReport), _E]),
    "firn_compare_backends_with": (c_int, [_S, POINTER(RunOptions), c_int, POINTER(CompareReport), _E]),
    "firn_compare_report_free": (None, [POINTER(CompareReport)]),
    "firn_cuda_available": (c_int, []),
    "firn_cuda_device_count": (c_int, []),
}


def _candidates() -> list[Path]:
    """Where libfirn.so is looked for, in order (docs/PYTHON.md): FIRN_LIB alone
    when set; else a copy inside the package, the repository's build/ when the
    package runs from python/ in a checkout, and the system's (make install)."""
    env = os.environ.get("FIRN_LIB")
    if env:
        return [Path(env)]
    here = Path(__file__).resolve().parent
    out = [here / "libfirn.so", here.parent.parent / "build" / "libfirn.so"]
    return out


class LibraryNotFound(OSError):
    pass


def _load() -> ctypes.CDLL:
    tried, lib = [], None
    for path in _candidates():
        if path.is_file():
            lib = ctypes.CDLL(str(path))
            break
        tried.append(str(path))
    if lib is None and not os.environ.get("FIRN_LIB"):
        found = ctypes.util.find_library("firn")  # the system's (make install), by soname
        if found:
            path, lib = Path(found), ctypes.CDLL(found)
        tried.append("the system's libfirn (ldconfig)")
    if lib is None:
        raise LibraryNotFound(
            "firn: libfirn.so not found (tried " + ", ".join(tried) + "); build it with "
            "`make build/libfirn.so` in the firn repository or set FIRN_LIB to its path"
        )
    for name, (restype, argtypes) in _SIGNATURES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise ImportError(f"firn: {path} has no {name}: a libfirn older than this package") from None
        fn.restype = restype
        fn.argtypes = argtypes
    for name, mirror in MIRRORS.items():
        size = lib.firn_struct_size(name.encode())
        if size != ctypes.sizeof(mirror):
            raise ImportError(
                f"firn: {path} has a {name} of {size} bytes, this package's mirror "
                f"{ctypes.sizeof(mirror)}: the library and the package are of different firn versions"
            )
    lib.path = str(path)
    return lib


lib = _load()
