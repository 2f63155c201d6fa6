"""The standard dynamic parameters delta (Wang 2019 eqs. 7-9) of a described arm.

Per frame, in order: the 10 barycentric inertial parameters
[Lxx Lxy Lxz Lyy Lyz Lzz lx ly lz m] (inertia about the frame origin, first
moment l = m r, mass), then the additional parameters [Fv Fc Fo Im K] that the
frame carries; then the drives' [Fv Fc Fo Im].
"""
from __future__ import annotations

from dataclasses import dataclass

from dvrk_ident_ros.model.description import ArmDescription

INERTIAL = ("xx", "xy", "xz", "yy", "yz", "zz")


@dataclass(frozen=True)
class ParameterLayout:
    names: tuple[str, ...]
    kinds: tuple[str, ...]  # "L", "l", "m", "Fv", "Fc", "Fo", "Im", "K"
    owners: tuple[str, ...]  # frame or drive name
    inertial_blocks: dict[str, int]  # frame name -> index of its Lxx (10 consecutive parameters)

    def __len__(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        return self.names.index(name)

    def of_kind(self, kind: str) -> list[int]:
        return [i for i, k in enumerate(self.kinds) if k == kind]


def parameter_layout(description: ArmDescription) -> ParameterLayout:
    names: list[str] = []
    kinds: list[str] = []
    owners: list[str] = []
    blocks: dict[str, int] = {}

    def add(name: str, kind: str, owner: str) -> None:
        names.append(name)
        kinds.append(kind)
        owners.append(owner)

    for frame in description.frames:
        n = frame.name
        if frame.inertia:
            blocks[n] = len(names)
            for suffix in INERTIAL:
                add(f"L{n}{suffix}", "L", n)
            for axis in "xyz":
                add(f"l{n}{axis}", "l", n)
            add(f"m{n}", "m", n)
        if frame.friction:
            for kind in ("Fv", "Fc", "Fo"):
                add(f"{kind}{n}", kind, n)
        if frame.motor_inertia:
            add(f"Im{n}", "Im", n)
        if frame.spring_deflection is not None:
            add(f"K{n}", "K", n)
    for drive in description.drives:
        if drive.friction:
            for kind in ("Fv", "Fc", "Fo"):
                add(f"{kind}{drive.name}", kind, drive.name)
        if drive.motor_inertia:
            add(f"Im{drive.name}", "Im", drive.name)
    return ParameterLayout(tuple(names), tuple(kinds), tuple(owners), blocks)
