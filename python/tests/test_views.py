"""Zero-copy views: they alias the C state (write through, read back), and
what is written is what the solver steps from."""

from __future__ import annotations

import numpy as np
import pytest

import firn
from conftest import sand_block


@pytest.fixture
def world():
    # Weightless, and clear of the walls' grid layers (the floor's friction).
    d = sand_block(gravity=[0, 0, 0])
    d["bodies"][0]["shape"]["center"] = [0.2, 0.15, 0.2]
    w = firn.World(firn.Scene.from_dict(d), backend="cpu")
    yield w
    w.close()


def test_views_are_the_c_state_not_copies(world):
    x = world.mpm.x
    assert x.shape == (world.mpm.n, 3) and x.dtype == np.float32
    assert world.mpm.n == 1440
    # Two fetches see the same memory, and a write through one is read back by the other.
    assert np.shares_memory(x, world.mpm.x)
    x[7] = (0.05, 0.25, 0.35)
    np.testing.assert_array_equal(world.mpm.x[7], np.float32([0.05, 0.25, 0.35]))
    # The library's own statistics read the written value.
    s = world.current_stats()
    assert s["bbox_lower"][0] == pytest.approx(0.05) and s["bbox_upper"][1] == pytest.approx(0.25)
    # Shapes of the other MPM arrays; F starts as the identity.
    assert world.mpm.F.shape == (1440, 3, 3) and world.mpm.C.shape == (1440, 3, 3)
    np.testing.assert_array_equal(world.mpm.F[:], np.broadcast_to(np.eye(3, dtype=np.float32), (1440, 3, 3)))
    assert world.mpm.material.dtype == np.uint8 and world.mpm.vol.shape == (1440,)


def test_component_major_layout(world):
    """x[i] is particle i: the (n, 3) view transposes the C state's x[a*n + i]."""
    x = world.mpm.x
    n = world.mpm.n
    rows = x.T  # (3, n): the C arrays' contiguous rows
    assert rows.flags.c_contiguous and rows.strides == (4 * n, 4)
    F = world.mpm.F
    F[3, 0, 1] = 0.25  # component 1 of particle 3: F[1*n + 3] in C
    rows9 = F.transpose(1, 2, 0)  # (3, 3, n): component-major, contiguous
    assert rows9.flags.c_contiguous
    assert rows9.reshape(9, n)[1, 3] == np.float32(0.25)
    assert np.shares_memory(F, world.mpm.F)


def test_written_velocity_is_what_the_solver_steps(world):
    """Without gravity, a block given a uniform velocity u moves rigidly: after
    stepping, its momentum is M u (the solver read the written velocities) and
    its centre of mass has moved by u t."""
    u = np.float32([0.4, -0.2, 0.1])
    world.mpm.v[:] = u
    s0 = world.current_stats()
    m = s0["mass"]
    np.testing.assert_allclose(s0["momentum"], m * u, rtol=1e-6)
    c0 = np.array(s0["center_of_mass"])
    world.step(2)  # 20 ms: the block stays clear of the walls
    s = world.stats
    np.testing.assert_allclose(s["momentum"], m * u, rtol=1e-4, atol=1e-7 * m)
    np.testing.assert_allclose(np.array(s["center_of_mass"]) - c0, u * world.time, rtol=1e-3, atol=1e-6)
    v = world.mpm.v
    np.testing.assert_allclose(v, np.broadcast_to(u, v.shape), atol=1e-4)


def three_solvers_scene():
    """SPH water, a PBD cloth and an FEM jelly, no MPM."""
    return firn.Scene.from_dict(
        {
            "domain": {"lower": [0, 0, 0], "upper": [0.5, 0.5, 0.5], "dx": 0.05},
            "time": {"frame_dt": 0.005, "frames": 2},
            "sph": {"particle_size": 0.04},
            "pbd": {"particle_size": 0.04},
            "materials": {
                "water": {"model": "sph_liquid"},
                "cloth": {"model": "pbd_cloth"},
                "jelly": {"model": "fem_corotated", "E": 1e5, "nu": 0.3, "density": 1000},
            },
            "bodies": [
                {"material": "water", "solver": "sph",
                 "shape": {"type": "box", "center": [0.12, 0.15, 0.12], "size": [0.16, 0.16, 0.16]}},
                {"material": "cloth", "solver": "pbd",
                 "shape": {"type": "cloth_rect", "center": [0.35, 0.4, 0.35], "size": [0.2, 0.2],
                           "resolution": [5, 4]}},
                {"material": "jelly", "solver": "fem",
                 "shape": {"type": "box", "center": [0.35, 0.15, 0.35], "size": [0.1, 0.1, 0.1],
                           "cells": [2, 2, 2]}},
            ],
        }
    )


def test_other_solvers_views():
    scene = three_solvers_scene()
    with firn.World(scene, backend="cpu") as w:
        assert w.mpm.n == 0 and w.mpm.x.shape == (0, 3)
        assert w.sph.n > 0 and w.sph.x.shape == (w.sph.n, 3)
        assert w.sph.pressure.shape == (w.sph.n,) and w.sph.density.shape == (w.sph.n,)
        assert w.pbd.n == 20 and w.pbd.triangles.shape == (2 * 4 * 3, 3)
        assert w.fem.n == 27 and w.fem.tets.shape == (48, 4)
        assert w.fem.stress.shape == (48, 6) and w.fem.von_mises.shape == (48,)
        w.step(1)
        s = w.stats
        # The views against the library's own sums: SPH particles share one mass,
        # so their mean is the centre of mass; the bounding boxes of all three.
        np.testing.assert_allclose(w.sph.x.mean(axis=0), s["sph"]["center_of_mass"], rtol=1e-5)
        for solver, key in ((w.sph, "sph"), (w.pbd, "pbd"), (w.fem, "fem")):
            lo, hi = np.array(s[key]["bbox_lower"]), np.array(s[key]["bbox_upper"])
            np.testing.assert_array_equal(solver.x.min(axis=0), lo.astype(np.float32))
            np.testing.assert_array_equal(solver.x.max(axis=0), hi.astype(np.float32))
        # Writes go through on the CPU path: the SPH, PBD and FEM positions.
        for solver in (w.sph, w.pbd, w.fem):
            x = solver.x
            x[0, 1] = 0.3125
            assert solver.x[0, 1] == np.float32(0.3125)


def test_fields_by_name_are_the_solvers_state():
    """world.field(solver, name) reads any field of a solver's table
    (firn_world_field): the same memory as the named views, the physics'
    own numbers (PBD masses that sum to the stats' mass), and unknown names
    refused naming the ones that exist."""
    scene = three_solvers_scene()
    with firn.World(scene, backend="cpu") as w:
        w.step(1)
        assert w.field_names("sph") == ["x", "v", "acc", "rho", "p", "alpha", "drho", "mat"]
        assert "C" in w.field_names("mpm") and w.field_names("rigid") == []
        assert np.shares_memory(w.field("sph", "x"), w.sph.x)
        np.testing.assert_array_equal(w.field("sph", "rho"), w.sph.density)
        assert w.field("fem", "fixed").dtype == np.uint8 and w.field("fem", "x").shape == (27, 3)
        assert w.field("mpm", "C").shape == (0, 9)
        # the cloth's particle masses add up to the mass its statistics report
        assert float(w.field("pbd", "mass").sum()) == pytest.approx(w.stats["pbd"]["mass"], rel=1e-6)
        with pytest.raises(firn.UsageError, match="no field 'temperature'; its fields are x, v"):
            w.field("sph", "temperature")
        with pytest.raises(firn.UsageError, match="no solver 'rigid'; the solvers with fields are mpm, sph, pbd, fem"):
            w.field("rigid", "x")
