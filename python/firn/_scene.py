"""Scenes: the JSON scene files of docs/SCENES.md, read and validated by libfirn."""

from __future__ import annotations

import ctypes
import json
import os
from typing import Any, Mapping

from . import _lib
from ._errors import error_from


class Scene:
    """A validated scene definition (firn_scene_def).

    Made by `Scene.from_json(path)` or `Scene.from_dict(d)`, with the same
    parser, validation and messages as `firn run`; a bad scene raises
    `firn.SceneError(path, message)`. `scene.raw` is the ctypes mirror of
    firn_scene_def, for reading (and, followed by `validate()`, editing)
    any field.
    """

    def __init__(self, raw: _lib.SceneDef, path: str | None = None):
        self.raw = raw
        self.path = path

    @classmethod
    def from_json(cls, path: str | os.PathLike) -> "Scene":
        """Reads and validates a JSON scene file (mesh paths relative to its folder)."""
        raw = _lib.SceneDef()
        err = _lib.Error()
        p = os.fspath(path)
        if _lib.lib.firn_scene_load_json(os.fsencode(p), ctypes.byref(raw), ctypes.byref(err)):
            raise error_from(err, path=p)
        return cls(raw, p)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], name: str = "<dict>") -> "Scene":
        """Validates a scene given as a dict with the JSON file's keys; `name`
        stands for the file in messages (mesh paths are relative to the
        working directory)."""
        try:
            text = json.dumps(d, allow_nan=False)
        except (TypeError, ValueError) as e:
            from ._errors import SceneError

            raise SceneError(name, f"{name}: not representable as JSON: {e}") from None
        return cls.from_text(text, name)

    @classmethod
    def from_text(cls, text: str, name: str = "<text>") -> "Scene":
        """Validates a scene given as JSON text."""
        raw = _lib.SceneDef()
        err = _lib.Error()
        if _lib.lib.firn_scene_parse_json(
            text.encode("utf-8"), name.encode("utf-8"), ctypes.byref(raw), ctypes.byref(err)
        ):
            raise error_from(err, path=name)
        return cls(raw, name)

    def validate(self) -> None:
        """Checks the definition again (after editing `raw`); raises SceneError."""
        err = _lib.Error()
        if _lib.lib.firn_scene_validate(ctypes.byref(self.raw), ctypes.byref(err)):
            raise error_from(err, path=self.path)

    def copy(self) -> "Scene":
        raw = _lib.SceneDef()
        ctypes.pointer(raw)[0] = self.raw
        return Scene(raw, self.path)

    @property
    def frames(self) -> int:
        """time.frames: the frames `firn run` steps."""
        return int(self.raw.frames)

    @property
    def frame_dt(self) -> float:
        return float(self.raw.frame_dt)

    @property
    def dx(self) -> float:
        return float(self.raw.dx)

    @property
    def rigid_names(self) -> list[str]:
        return [self.raw.rigids[k].name.decode() for k in range(self.raw.n_rigids)]

    @property
    def tool_names(self) -> list[str]:
        return [self.raw.tools[k].name.decode() for k in range(self.raw.n_tools)]

    @property
    def material_names(self) -> list[str]:
        return [self.raw.materials[k].name.decode() for k in range(self.raw.n_materials)]

    def __repr__(self) -> str:
        return (
            f"firn.Scene({self.path!r}: {self.raw.n_materials} materials, {self.raw.n_bodies} "
            f"bodies, {self.raw.n_rigids} rigids, {self.raw.n_tools} tools, dx {self.dx:g} m)"
        )
