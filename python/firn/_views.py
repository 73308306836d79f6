"""Zero-copy NumPy views of a world's state, with a lifetime check.

A view is a `FirnArray`: a NumPy array over the C library's own memory
(no copy) that knows which world and which step it came from. Indexing,
arithmetic and printing check first that the world is still open and has
not stepped since the view was made, and raise `ClosedError` or
`StaleViewError` otherwise. Whatever escapes the check (a plain array made
with `np.asarray(view)` before the world closed) still cannot crash the
interpreter: every view holds a reference that keeps the C world's memory
allocated until the last view of it is gone.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ._errors import ClosedError, StaleViewError


class Life:
    """One generation of a world's state: alive until the world steps or closes."""

    __slots__ = ("handle", "alive", "reason", "__weakref__")

    def __init__(self, handle):
        self.handle = handle  # keeps the C world allocated while any view holds this
        self.alive = True
        self.reason = ""

    def end(self, reason: str) -> None:
        self.alive = False
        self.reason = reason

    def check(self) -> None:
        if not self.alive:
            if self.reason == "closed":
                raise ClosedError("view of a closed firn.World")
            raise StaleViewError(
                "view of a firn.World's state from before its last step "
                f"({self.reason}): read it again, e.g. world.mpm.x"
            )


def _plain(a):
    return a.view(np.ndarray) if isinstance(a, FirnArray) else a


class FirnArray(np.ndarray):
    """A NumPy array over a firn world's memory that raises once that memory is stale."""

    def __array_finalize__(self, obj):
        self._firn_life = getattr(obj, "_firn_life", None)

    def _firn_check(self):
        life = self._firn_life
        if life is not None:
            life.check()

    def __getitem__(self, key):
        self._firn_check()
        return super().__getitem__(key)

    def __setitem__(self, key, value):
        self._firn_check()
        super().__setitem__(key, value)

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        for a in inputs + (out or ()):
            if isinstance(a, FirnArray):
                a._firn_check()
        inputs = tuple(_plain(a) for a in inputs)
        if out is not None:
            kwargs["out"] = tuple(_plain(a) for a in out)
        result = getattr(ufunc, method)(*inputs, **kwargs)
        if out is not None and len(out) == 1:
            return out[0]  # in-place operators return the view itself
        return result

    def __array_function__(self, func, types, args, kwargs):
        self._firn_check()
        return super().__array_function__(func, types, args, kwargs)

    def __array__(self, dtype=None, *args, **kwargs):
        self._firn_check()
        a = self.view(np.ndarray)
        return a if dtype is None else a.astype(dtype, copy=False)

    def __repr__(self):
        self._firn_check()
        return repr(self.view(np.ndarray)).replace("array", "FirnArray", 1)

    def __str__(self):
        self._firn_check()
        return str(self.view(np.ndarray))

    def __iter__(self):
        self._firn_check()
        return super().__iter__()

    def __len__(self):
        self._firn_check()
        return super().__len__()

    def tolist(self):
        self._firn_check()
        return super().tolist()

    def copy(self, order="C"):
        """A plain NumPy copy (safe to keep across steps)."""
        self._firn_check()
        return np.array(self.view(np.ndarray), order=order, copy=True)


_CTYPES = {np.dtype(np.float32): ctypes.c_float, np.dtype(np.uint8): ctypes.c_uint8,
           np.dtype(np.int32): ctypes.c_int}


def wrap(life: Life, ptr, dtype, shape, strides=None, writeable=True) -> FirnArray:
    """A FirnArray of `shape` over the C memory at ptr (element strides in items)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape)) if shape else 1
    addr = ctypes.cast(ptr, ctypes.c_void_p).value if ptr else None
    if count == 0 or not addr:
        a = np.zeros(shape, dtype).view(FirnArray)
        a._firn_life = life
        a.flags.writeable = False
        return a
    span = count if strides is None else 1 + sum((s - 1) * st for s, st in zip(shape, strides))
    buf = (_CTYPES[dtype] * span).from_address(addr)
    buf._firn_life = life  # the memory's owner outlives every array over buf
    byte_strides = None if strides is None else tuple(st * dtype.itemsize for st in strides)
    a = np.ndarray(shape=shape, dtype=dtype, buffer=buf, strides=byte_strides).view(FirnArray)
    a._firn_life = life
    if not writeable:
        a.flags.writeable = False
    return a


def soa(life: Life, ptr, n: int, comps: int, writeable: bool, dtype=np.float32) -> FirnArray:
    """Component-major C state (component c of item i at c*n + i) as an (n, comps) view."""
    return wrap(life, ptr, dtype, (n, comps), strides=(1, n), writeable=writeable)


def soa_matrix(life: Life, ptr, n: int, writeable: bool) -> FirnArray:
    """9n component-major, row-major per item, as an (n, 3, 3) view."""
    return wrap(life, ptr, np.float32, (n, 3, 3), strides=(1, 3 * n, n), writeable=writeable)
