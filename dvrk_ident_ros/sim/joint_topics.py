"""The dVRK's joint topics over the simulated arm's joints (ROS-free): a PSM's arm joints on ``/<ARM>/...``, its
jaw (the last joint) on ``/<ARM>/jaw/...``; a PSM without its tool has its raw joints on the arm's topics and
no jaw (its jaw topics carry a zero, stamp 0, and it has no Cartesian data). The joint states: what each topic
carries for one sample (an MTM's gripper a zero; ``gravity_compensation/setpoint_js`` the built-in compensation's
torques, zeros while it is off). The joint commands take the topics' values as they come (lists, arrays) and
raise DvrkIdentError (a wrong value: the arm keeps its command) or ArmNotReadyError (the arm is not ready:
ignored)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dvrk_ident_ros.arm.registry import ArmSpec
from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.sim.arm import Sample, SimulatedArm

Values = Sequence[float] | np.ndarray


@dataclass(frozen=True)
class JointStateData:
    """One joint-state topic's message for one sample; ``valid`` False: stamp 0 (the bridge's invalid data)."""

    topic: str
    names: Sequence[str]
    position: Values | None
    velocity: Values | None
    effort: Values | None
    valid: bool


def jaw_value(values: Values, field: str) -> float:
    """The one finite value of a jaw command's ``field``."""
    if len(values) != 1:
        raise DvrkIdentError(f"jaw {field}: {len(values)} values, expected 1")
    value = float(values[0])
    if not math.isfinite(value):
        raise DvrkIdentError(f"jaw {field}: {value}")
    return value


class JointTopics:
    """The joint commands of one simulated arm, the jaw's apart; ``jaw_effort``: the last jaw/servo_jf, kept
    for the arm's effort commands that give the arm joints only."""

    def __init__(self, sim: SimulatedArm, spec: ArmSpec) -> None:
        self.sim = sim
        self.spec = spec
        # the PSM's jaw is published on its own topics; without a tool the PSM publishes its 7 raw joints
        self.arm_joints = spec.arm_joints if sim.tool_engaged else spec.dof
        self.jaw = spec.jaw_index if spec.jaw_index is not None else spec.dof  # the jaw's index (dof: none)
        self.jaw_effort = 0.0

    @property
    def has_jaw(self) -> bool:
        """The jaw is on its own topics (a PSM with its tool)."""
        return self.arm_joints < self.sim.dof

    def jaw_state(self, values: np.ndarray) -> np.ndarray:
        """The jaw's part of a state (one zero without a tool: the bridge's jaw topics then carry no data)."""
        return values[self.jaw:] if self.has_jaw else np.zeros(1)

    def state_topics(self) -> list[str]:
        """The joint-state topics of the arm's family, in publishing order."""
        return (["measured_js", "setpoint_js", "gravity_compensation/setpoint_js"]
                + (["jaw/measured_js", "jaw/setpoint_js"] if self.spec.jaw else [])
                + (["gripper/measured_js"] if self.spec.gripper else []))

    def states(self, sample: Sample, builtin: np.ndarray) -> list[JointStateData]:
        """What each joint-state topic carries for one sample (zeros while it is not valid) and the built-in
        compensation's torques ``builtin`` (valid with the joints' data: the dVRK marks the flag's state valid
        only while the joints are ready)."""
        n, valid = self.arm_joints, sample.valid
        names = self.sim.names[:n]
        states = [
            JointStateData("measured_js", names, sample.position[:n], sample.velocity[:n], sample.effort[:n], valid),
            JointStateData("setpoint_js", names, sample.setpoint_position[:n], None, sample.setpoint_effort[:n],
                           valid)]
        if self.spec.jaw:
            jaw, jaw_valid = self.jaw_state, valid and self.has_jaw
            states += [JointStateData("jaw/measured_js", ["jaw"], jaw(sample.position), jaw(sample.velocity),
                                      jaw(sample.effort), jaw_valid),
                       JointStateData("jaw/setpoint_js", ["jaw"], jaw(sample.setpoint_position), None,
                                      jaw(sample.setpoint_effort), jaw_valid)]
        if self.spec.gripper:
            states.append(JointStateData("gripper/measured_js", ["gripper"], [0.0], None, None, valid))
        states.append(JointStateData("gravity_compensation/setpoint_js", names, None, None, builtin[:n], valid))
        return states

    def cartesian_valid(self, sample: Sample) -> bool:
        """The Cartesian data is valid: it needs the kinematic joints (a PSM without its tool has none)."""
        return sample.valid and (not self.spec.jaw or self.has_jaw)

    def with_jaw(self, values: Values, reference: np.ndarray) -> np.ndarray:
        """The arm joints' ``values`` completed with the jaw's from ``reference`` (other lengths as they are)."""
        arr = np.asarray(values, dtype=float)
        if self.arm_joints == self.sim.dof or arr.size != self.arm_joints:
            return arr
        return np.append(arr, reference[self.arm_joints:])

    # -- the arm's topics --------------------------------------------------------------
    def servo_jp(self, position: Values, velocity: Values, at: float | None, received: float) -> None:
        """A streamed setpoint (``at``: its stamp's simulated time; ``received``: when it reached the arm); the
        arm joints alone leave the jaw's stream as it is."""
        self.sim.require_ready("servo_jp")
        q_ref, qd_ref = self.sim.servo_reference()
        qd = self.with_jaw(velocity, qd_ref) if len(velocity) else None
        joints = None if self.arm_joints == self.sim.dof or len(position) != self.arm_joints \
            else np.arange(self.arm_joints)
        self.sim.servo_jp(self.with_jaw(position, q_ref), qd, at=at, joints=joints, received=received)

    def servo_jr(self, delta: Values, velocity: Values, at: float | None, received: float) -> None:
        """servo_jp of the stream's setpoint plus ``delta`` (the dVRK's servo_jr: relative to the PID's)."""
        self.sim.require_ready("servo_jr")
        step = self.sim.checker.finite(delta, "servo_jr position", len(delta))
        self.servo_jp(self.sim.servo_reference()[0][:step.size] + step, velocity, at, received)

    def move_jp(self, position: Values) -> None:
        """A move to ``position``; a PSM's arm joints alone: the jaw keeps its goal (the dVRK's move_jp sets the
        kinematic joints' only)."""
        self.sim.require_ready("move_jp")
        if self.has_jaw and len(position) == self.arm_joints:
            self.sim.move_joints(self.with_jaw(position, self.sim.q_ref), np.arange(self.arm_joints))
        else:
            self.sim.move_jp(self.with_jaw(position, self.sim.q_ref))

    def move_jr(self, delta: Values) -> None:
        """move_jp to the setpoint plus ``delta``."""
        self.sim.require_ready("move_jr")
        step = self.sim.checker.finite(delta, "move_jr position", len(delta))
        self.move_jp(self.sim.q_ref[:step.size] + step)

    def servo_jf(self, effort: Values) -> None:
        """Efforts; the arm joints' alone: the jaw keeps the last jaw/servo_jf's."""
        self.sim.require_ready("servo_jf", effort=True)
        tau = np.asarray(effort, dtype=float)
        if self.has_jaw and tau.size == self.arm_joints:
            tau = np.append(tau, self.jaw_effort)
        self.sim.servo_jf(tau)

    # -- the jaw's topics --------------------------------------------------------------
    def jaw_servo_jp(self, position: Values, velocity: Values, at: float | None, received: float) -> None:
        """The jaw's streamed setpoint; the arm's joints keep theirs."""
        self.sim.require_ready("jaw/servo_jp")
        q_ref, qd_ref = self.sim.servo_reference()
        q, qd = q_ref.copy(), qd_ref.copy()
        q[self.jaw] = jaw_value(position, "position")
        qd[self.jaw] = jaw_value(velocity, "velocity") if len(velocity) else 0.0
        self.sim.servo_jp(q, qd, at=at, joints=[self.jaw], received=received)

    def jaw_move_jp(self, position: Values) -> None:
        """The jaw's move; the arm's own move_jp goes on (the dVRK's jaw_move_jp)."""
        self.sim.require_ready("jaw/move_jp")
        q = self.sim.q_ref.copy()
        q[self.jaw] = jaw_value(position, "position")
        self.sim.move_joints(q, [self.jaw])

    def jaw_servo_jf(self, effort: Values) -> None:
        """The jaw's effort, kept for the arm's next servo_jf; applied now if the arm is in effort mode."""
        self.sim.require_ready("jaw/servo_jf", effort=True)
        self.jaw_effort = jaw_value(effort, "effort")
        if self.sim.mode == "effort":
            tau = self.sim.effort_command.copy()
            tau[self.jaw] = self.jaw_effort
            self.sim.servo_jf(tau)
