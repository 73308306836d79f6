"""Lifetime: views of a stepped or closed world raise instead of reading
stale or freed memory, and nothing crashes the interpreter."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import firn
from conftest import REPO, sand_block


def make():
    return firn.World(firn.Scene.from_dict(sand_block()), backend="cpu")


def test_view_after_step_raises_stale():
    w = make()
    x = w.mpm.x
    row = x[0:4]  # a slice of a view is a view, checked the same way
    w.step()
    for use in (lambda: x[0], lambda: row.sum(), lambda: x + 1, lambda: repr(x), lambda: len(x)):
        with pytest.raises(firn.StaleViewError, match="before its last step"):
            use()
    with pytest.raises(firn.StaleViewError):
        x[0] = 1.0
    assert w.mpm.x.shape == (1440, 3)  # a fresh fetch works
    w.close()


def test_view_of_closed_world_raises():
    w = make()
    x, F, pos = w.mpm.x, w.mpm.F, w.mpm.v
    w.close()
    assert w.closed
    for use in (lambda: x[0], lambda: F.sum(), lambda: np.mean(pos), lambda: x.copy()):
        with pytest.raises(firn.ClosedError, match="closed"):
            use()
    for use in (lambda: w.mpm.x, lambda: w.step(), lambda: w.time, lambda: w.stats):
        with pytest.raises(firn.ClosedError):
            use()
    w.close()  # twice is fine


def test_context_manager_closes():
    with make() as w:
        x = w.mpm.x
    with pytest.raises(firn.ClosedError):
        x.max()


def test_escaped_arrays_cannot_crash():
    """An array that escaped the check (np.asarray before the close) keeps the
    C memory alive: reading it after close and a collection reads the last
    state. Run in a child interpreter, so that a crash fails this test
    instead of the run."""
    code = textwrap.dedent(
        f"""
        import gc, sys
        sys.path.insert(0, {str(REPO / 'python')!r}); sys.path.insert(0, {str(REPO / 'python' / 'tests')!r})
        import numpy as np, firn
        from conftest import sand_block
        w = firn.World(firn.Scene.from_dict(sand_block()), backend="cpu")
        raw = np.asarray(w.mpm.x)
        expect = raw.copy()
        w.close(); del w; gc.collect()
        junk = [np.ones(10**5) for _ in range(50)]  # reuse of freed memory would show here
        assert np.array_equal(raw, expect)
        del raw; gc.collect()
        print("ok")
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
