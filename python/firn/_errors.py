"""Exceptions: one class per firn_status code, each carrying the C message."""

from __future__ import annotations


class FirnError(Exception):
    """An error reported by libfirn: `code` is the firn_status (firn.h), `message` its text."""

    code: int | None = None

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class UsageError(FirnError, ValueError):
    """FIRN_E_USAGE: a bad argument (an unknown tool, a non-finite velocity, ...)."""

    code = 2


class SceneError(FirnError):
    """FIRN_E_SCENE: a malformed or invalid scene; `path` names the file (or the dict's name)."""

    code = 3

    def __init__(self, path: str | None, message: str, code: int = 3):
        super().__init__(message, code)
        self.path = path


class FirnIOError(FirnError, OSError):
    """FIRN_E_IO: a missing file or an unwritable output."""

    code = 4


class NumericError(FirnError, ArithmeticError):
    """FIRN_E_NUMERIC: NaN or Inf in the state, or an unsafe time step."""

    code = 5


class DeviceError(FirnError):
    """FIRN_E_DEVICE: no usable GPU, a CUDA error, out of device memory."""

    code = 6


class OutOfMemoryError(FirnError, MemoryError):
    """FIRN_E_NOMEM: out of host memory."""

    code = 7


class CompareError(FirnError):
    """FIRN_E_COMPARE: a backend comparison beyond its tolerance."""

    code = 8


class CheckpointError(FirnError):
    """FIRN_E_CHECKPOINT: a checkpoint of another scene or version, truncated or corrupted."""

    code = 9


class ClosedError(FirnError):
    """A world (or a view of it) used after World.close()."""


class StaleViewError(FirnError):
    """A view of the state read after the world stepped: fetch it again (world.mpm.x)."""


_BY_CODE = {
    c.code: c
    for c in (
        UsageError,
        FirnIOError,
        NumericError,
        DeviceError,
        OutOfMemoryError,
        CompareError,
        CheckpointError,
    )
}


def error_from(err, path: str | None = None) -> FirnError:
    """The exception for a filled firn_error (a ctypes Error)."""
    code = int(err.code)
    message = err.msg.decode("utf-8", errors="replace") or f"firn error {code}"
    if code == SceneError.code:
        return SceneError(path, message)
    cls = _BY_CODE.get(code, FirnError)
    if cls is FirnError:
        return FirnError(message, code)
    return cls(message, code)
