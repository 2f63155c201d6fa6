"""The arm registry: dVRK arm names and what each arm family is, as data (ROS-free).

Every arm family is one arm description (``config/<model>.yaml``) with a ``dvrk:`` section: the arm
names of the family (``names``: MTML, MTMR), the joint published on its own ``/<ARM>/jaw/*`` topics
(``jaw``), the gripper topic, whether the dVRK has its own gravity compensation on it, the estimators
and compensations that apply, the compensation's torque limits, the default excitation trajectory and
base frequency, the simulator's configuration, the template of the dVRK console's own gravity chain
(``console_gc``, for ``kinematic_gc``) and the chain the console loads without one (``console_gc_default``).
:func:`arm_spec` gives them as an :class:`ArmSpec`;
nodes, launch files, the service, the CLI and the simulator read them there and nowhere else.

Search path: the package's ``config/`` directory, then every directory of the environment variable
``DVRK_IDENT_ARM_PATH`` (``dir1:dir2``, as PATH): an arm that exists only as YAML files in such a
directory is used with no code change. An arm name claimed by two files of one generation is an error, and so is
a family or model named as an arm (an arm name means a family by the generation).

Arm names are case-insensitive in (``psm1``, ``Psm1``) and canonical out (``PSM1``, the name the dVRK
uses in its topics): every node, launch file and service reads them through :func:`canonical_arm`.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from dvrk_ident_ros.errors import DescriptionError, DvrkIdentError
from dvrk_ident_ros.estimators import GRAVITY, compensation_names, estimator, estimator_names

#: The environment variable naming extra arm directories (``os.pathsep``-separated).
ARM_PATH_VARIABLE = "DVRK_IDENT_ARM_PATH"
#: The environment variable choosing the generation of the patient side (classic, the default, or si): which
#: family an arm name two generations share (PSM1, ECM) means, as a dVRK console's "generation" does.
GENERATION_VARIABLE = "DVRK_IDENT_GENERATION"
GENERATIONS = ("classic", "si")
#: The registry section of an arm description.
SECTION = "dvrk"
#: The package's own topics live under this namespace, one sub-namespace per arm.
NAMESPACE = "/dvrk_ident"


@dataclass(frozen=True)
class ArmSpec:
    """One arm family's traits (the ``dvrk:`` section of its description, and the description's joints)."""

    family: str  # MTM, PSM: upper case, what a request may name instead of one arm
    model: str  # the description's ``arm`` (mtm, psm): what load_model / identification results name
    description: Path  # the arm description file
    names: tuple[str, ...]  # MTML, MTMR: canonical (upper case)
    joint_names: tuple[str, ...]  # dvrk_joint_names, in order
    variants: tuple[str, ...]  # the description's variants (limits per arm: the MTMR's mirrored wrist)
    jaw: str | None  # the dVRK joint on /<ARM>/jaw/* (the PSM's jaw); None: measured_js carries every joint
    gripper: bool  # /<ARM>/gripper/measured_js
    builtin_gravity_compensation: bool  # the dVRK's own gravity compensation (gravity_compensation/setpoint_js)
    estimators: tuple[str, ...]
    compensations: tuple[str, ...]
    compensation_torque_limit: tuple[float, ...]  # per dVRK joint, for a compensation from an identified model
    trajectory: Path | None  # the default excitation trajectory
    base_frequency: float  # Hz: the excitation's default base frequency
    simulation: Path | None  # the simulated arm's configuration (servo, noise, true parameters)
    models: tuple[str, ...]  # the descriptions of this family: ``model`` first, then others (psm_simplified)
    console_gc: Path | None = None  # the dVRK console's physical-DH gravity chain (kinematic_gc): its template
    console_gc_default: Path | None = None  # the chain the console loads without kinematic_gc (None: no gravity)
    console_kinematics: Path | None = None  # the console's DH chain and tool tip (measured_cp); None: the description's
    generation: str = "classic"  # classic or si: the family an arm name shared by both means (GENERATION_VARIABLE)

    @property
    def dof(self) -> int:
        return len(self.joint_names)

    @property
    def jaw_index(self) -> int | None:
        """The jaw's index among the dVRK joints (None: no jaw)."""
        return self.joint_names.index(self.jaw) if self.jaw else None

    @property
    def arm_joints(self) -> int:
        """Joints on ``/<ARM>/measured_js`` (and servo_jp): all but the jaw (the jaw is the last joint)."""
        return self.dof - 1 if self.jaw else self.dof

    @property
    def gc_fits(self) -> bool:
        """A gc file is fitted for this arm (MLSE, from pose grids): one of its estimators is a GRAVITY one."""
        return any(estimator(e).target == GRAVITY for e in self.estimators)

    def variant(self, arm: str) -> str | None:
        """The description variant of ``arm`` (its limits), None where the description has none for it."""
        name = canonical_arm(arm)
        return name if name in self.variants else None

    def state_prefixes(self, arm: str) -> list[str]:
        """The namespaces of the arm's joint-state topics: ``/<ARM>/`` and, with a jaw, ``/<ARM>/jaw/``."""
        return [f"/{arm}/"] + ([f"/{arm}/jaw/"] if self.jaw else [])

    def extra_state_topics(self, arm: str) -> list[str]:
        """Measured joint states besides measured_js and the jaw's: the MTM gripper."""
        return [f"/{arm}/gripper/measured_js"] if self.gripper else []

    def description_file(self, model: str) -> Path:
        """The description file of one of this family's ``models``."""
        return self.description if model == self.model else self.description.parent / f"{model}.yaml"


def arm_directories() -> tuple[Path, ...]:
    """Where arm descriptions are looked for: the package's config/, then ``DVRK_IDENT_ARM_PATH``."""
    from dvrk_ident_ros.environment import find_share_directory

    share = find_share_directory()
    dirs = [share / "config"] if share is not None and (share / "config").is_dir() else []
    for entry in os.environ.get(ARM_PATH_VARIABLE, "").split(os.pathsep):
        if entry.strip():
            path = Path(entry.strip()).expanduser().absolute()
            if path not in dirs:
                dirs.append(path)
    return tuple(dirs)


def selected_generation() -> str:
    """The patient side's generation this process works with: ``DVRK_IDENT_GENERATION`` (classic by default)."""
    value = os.environ.get(GENERATION_VARIABLE, "").strip().lower() or "classic"
    if value not in GENERATIONS:
        raise DvrkIdentError(f"{GENERATION_VARIABLE}={os.environ.get(GENERATION_VARIABLE)!r}: one of "
                             f"{', '.join(GENERATIONS)} (any case)")
    return value


def known_arms() -> tuple[str, ...]:
    """Every arm name of the registry (MTML, MTMR, PSM1, ...), once each, in search-path order."""
    return tuple(dict.fromkeys(name for spec in _registry(arm_directories()) for name in spec.names))


def arm_families() -> tuple[ArmSpec, ...]:
    """Every arm family of the registry, in search-path order."""
    return _registry(arm_directories())


def canonical_arm(name: str) -> str:
    """The canonical dVRK arm name of ``name`` (case and surrounding blanks ignored)."""
    canonical = str(name).strip().upper()
    known = known_arms()
    if canonical not in known:
        raise DvrkIdentError(f"unknown arm {name!r}: expected one of {', '.join(known)} (any case)")
    return canonical


def arm_spec(name: str) -> ArmSpec:
    """The family traits of an arm (MTML, psm2, ...), of a family (MTM) or of a model (mtm, psm_simplified)."""
    text = str(name).strip()
    families = arm_families()
    for spec in families:
        if text.upper() == spec.family or text.lower() in spec.models:
            return spec
    named = [spec for spec in families if text.upper() in spec.names]
    if named:  # an arm name: the selected generation's family, else the only one that has it (the MTMs)
        generation = selected_generation()
        return next((spec for spec in named if spec.generation == generation), named[0])
    known = ", ".join(known_arms())
    raise DvrkIdentError(f"unknown arm {name!r}: expected one of {known} (any case; another arm's description "
                         f"goes in a directory of {ARM_PATH_VARIABLE})")


def arm_family(name: str) -> str:
    """The model name of an arm's family ('mtm', 'psm'): the description it is identified with."""
    return arm_spec(canonical_arm(name)).model


def description_path(name: str) -> Path | None:
    """The description file of an arm, family or model name (None: not in the registry)."""
    try:
        spec = arm_spec(name)
    except DvrkIdentError:
        return None
    return spec.description_file(name.strip().lower()) if name.strip().lower() in spec.models else spec.description


def mlse_arms() -> tuple[ArmSpec, ...]:
    """The arm families a gc file is fitted for (MLSE and the estimator registry's other GRAVITY estimators:
    the MTMs)."""
    return tuple(spec for spec in arm_families() if spec.gc_fits)


def player_status_topic(arm: str) -> str:
    """Where the trajectory player of ``arm`` publishes its PlayerStatus."""
    return f"{NAMESPACE}/{canonical_arm(arm)}/player_status"


def recorder_status_topic(arm: str) -> str:
    """Where the recorder of ``arm`` publishes its RecorderStatus."""
    return f"{NAMESPACE}/{canonical_arm(arm)}/recorder_status"


@lru_cache(maxsize=8)
def _registry(directories: tuple[Path, ...]) -> tuple[ArmSpec, ...]:
    specs: list[ArmSpec] = []
    owner: dict[str, Path] = {}
    for directory in directories:
        for path in sorted(directory.glob("*.yaml")):
            spec = _read_spec(path)
            if spec is None:
                continue
            # an arm name may be shared by two generations (PSM1 Classic, PSM1 Si), by no two families of one
            for name in (*(f"{n}/{spec.generation}" for n in spec.names), spec.family, *spec.models):
                if name in owner:
                    raise DescriptionError(f"{path}: {SECTION}: {name.split('/')[0]} is already defined by "
                                           f"{owner[name]}")
                owner[name] = path
            specs.append(spec)
    arm_names = {name: spec for spec in specs for name in spec.names}
    for spec in specs:  # an arm name means a family by the generation: a family or model by that name would not
        clash = next((n for n in (spec.family, *(m.upper() for m in spec.models)) if n in arm_names), None)
        if clash is not None:
            raise DescriptionError(f"{spec.description}: {SECTION}: {clash} names this family or model and an arm "
                                   f"of {arm_names[clash].family}: give the family another name (e.g. "
                                   f"{clash}_CLASSIC)")
    return tuple(specs)


def _read_spec(path: Path) -> ArmSpec | None:
    """The ArmSpec of a description with a ``dvrk:`` section (None: another file: a node's, a grid)."""
    from dvrk_ident_ros.files import read_document

    try:
        text = path.read_text()
    except OSError:
        return None
    if f"\n{SECTION}:" not in text:  # cheap: most YAML files of a config directory are no arm
        return None
    raw = read_document(path, DescriptionError)
    if not isinstance(raw, dict) or not isinstance(raw.get(SECTION), dict) or "arm" not in raw:
        return None
    return _parse(path, raw, raw[SECTION])


def _parse(path: Path, raw: dict[str, Any], spec: dict[str, Any]) -> ArmSpec:
    def fail(key: str, what: str) -> DescriptionError:
        return DescriptionError(f"{path}: {SECTION}.{key}: {what}")

    def names(key: str, allowed: tuple[str, ...] | None = None, required: bool = True) -> tuple[str, ...]:
        value = spec.get(key)
        if value is None and not required:
            return ()
        if not isinstance(value, list) or (required and not value) or not all(isinstance(v, str) for v in value):
            raise fail(key, f"expected a list of names, got {value!r}")
        if allowed is not None and not set(value) <= set(allowed):
            raise fail(key, f"{sorted(set(value) - set(allowed))} not among {', '.join(allowed)}")
        return tuple(value)

    def relative(key: str) -> Path | None:
        value = spec.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise fail(key, f"expected a path relative to the description, got {value!r}")
        return path.parent / value

    model = str(raw["arm"]).lower()
    family = spec.get("family")
    if not isinstance(family, str) or not family.strip() or family != family.upper():
        raise fail("family", f"expected an upper-case name (MTM), got {family!r}")
    arm_names = names("names")
    lower = [n for n in arm_names if n != n.upper() or not n.strip() or "/" in n]
    if lower:
        raise fail("names", f"arm names are upper case, as in the dVRK's topics: {lower}")
    joints = tuple(str(n) for n in raw.get("dvrk_joint_names") or ())
    jaw = spec.get("jaw")
    if jaw is not None and (not joints or jaw != joints[-1]):
        raise fail("jaw", f"{jaw!r} is not the last of dvrk_joint_names {list(joints)}")
    limit = spec.get("compensation_torque_limit")
    if not isinstance(limit, list | tuple):
        raise fail("compensation_torque_limit", f"expected {len(joints)} numbers, got {limit!r}")
    try:
        limits = tuple(float(x) for x in limit)
    except (TypeError, ValueError):
        raise fail("compensation_torque_limit", f"expected {len(joints)} numbers, got {limit!r}") from None
    if len(limits) != len(joints) or not all(0.0 < x < math.inf for x in limits):
        raise fail("compensation_torque_limit", f"expected {len(joints)} numbers > 0, got {limit!r}")
    generation = str(spec.get("generation", "classic")).lower()
    if generation not in GENERATIONS:
        raise fail("generation", f"one of {', '.join(GENERATIONS)}, got {spec.get('generation')!r}")
    frequency = spec.get("base_frequency", 0.1)
    if isinstance(frequency, bool) or not isinstance(frequency, (int, float)) or not frequency > 0:
        raise fail("base_frequency", f"expected a frequency > 0 Hz, got {frequency!r}")
    return ArmSpec(
        family=family, model=model, description=path, names=arm_names, joint_names=joints,
        variants=tuple(str(v).upper() for v in (raw.get("variants") or {})), jaw=jaw,
        gripper=bool(spec.get("gripper", False)),
        builtin_gravity_compensation=bool(spec.get("builtin_gravity_compensation", False)),
        estimators=names("estimators", estimator_names()), compensations=names("compensations", compensation_names()),
        compensation_torque_limit=limits, trajectory=relative("trajectory"), base_frequency=float(frequency),
        simulation=relative("simulation"), models=(model, *(m.lower() for m in names("models", required=False))),
        console_gc=relative("console_gc"), console_gc_default=relative("console_gc_default"),
        console_kinematics=relative("console_kinematics"), generation=generation)
