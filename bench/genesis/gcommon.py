"""Shared helpers for the Genesis reference runs (genesis-world 1.4.5, CPU backend, fp32)."""

import json
import os
import platform
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
os.makedirs(RESULTS, exist_ok=True)


def init_genesis(seed=0):
    import genesis as gs

    gs.init(backend=gs.cpu, precision="32", logging_level="warning", seed=seed)
    return gs


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.bool_,)):
        return bool(x)
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    try:
        import torch

        if isinstance(x, torch.Tensor):
            return x.detach().cpu().numpy().tolist()
    except Exception:
        pass
    return repr(x)


def dump_model(m):
    """pydantic options/material -> plain dict (callables such as update_stress are dropped)."""
    try:
        d = m.model_dump()
    except Exception:
        d = dict(vars(m))
    out = {}
    for k, v in d.items():
        if callable(v):
            continue
        out[k] = _jsonable(v)
    # private attributes that carry resolved values (e.g. SPH _support_radius, _hash_grid_res)
    priv = getattr(m, "__pydantic_private__", None) or {}
    for k, v in priv.items():
        if not callable(v):
            out[k] = _jsonable(v)
    # derived Lame parameters of MPM materials are plain attributes
    for k in ("mu", "lam"):
        if k not in out and hasattr(m, k) and not callable(getattr(m, k)):
            out[k] = _jsonable(getattr(m, k))
    out["__class__"] = type(m).__module__ + "." + type(m).__name__
    return out


def sph_solver_info(s):
    info = {
        "pressure_solver": s._pressure_solver,
        "particle_size": s.particle_size,
        "support_radius_h": s.support_radius,
        "particle_volume_used_for_mass_and_density (0.8*p^3)": s.particle_volume,
        "particle_mass": float(s.particles_info.mass.to_numpy()[0]),
        "rest_density": float(s._density0),
        "n_particles_total": s.n_particles,
        "hash_grid_cell_size": s.hash_grid_cell_size,
        "hash_grid_res": _jsonable(s.hash_grid_res),
        "boundary": {"type": "CubeBoundary (clamp position, zero normal velocity, restitution 0)",
                     "lower": _jsonable(s.boundary.lower), "upper": _jsonable(s.boundary.upper),
                     "restitution": s.boundary.restitution},
        "substep_dt": s.substep_dt,
        "kernel": "cubic spline, support radius h = 2*particle_size, k = 8/(pi h^3)",
        "dfsph": {"max_divergence_error": s._df_max_error_div, "max_density_error_percent": s._df_max_error_den,
                  "max_div_iters": s._df_max_div_iters, "max_den_iters": s._df_max_den_iters},
    }
    return info


def env_info():
    import genesis as gs
    import torch

    return {
        "genesis_version": gs.__version__,
        "torch_version": torch.__version__,
        "backend": "gs.cpu",
        "precision": "32",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }


def write_json(name, d):
    path = os.path.join(RESULTS, name)
    with open(path, "w") as f:
        json.dump(_jsonable(d), f, indent=2)
    print("wrote", path)


class Timer:
    def __init__(self):
        self.t0 = time.time()

    def __call__(self):
        return time.time() - self.t0
