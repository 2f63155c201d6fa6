"""MJCF (MuJoCo) of an export tree: bodies with identified inertials, joints, tendons, joint equalities.

A frame that moves with several dVRK joints gets one joint per dVRK joint on the same body (MuJoCo composes
a body's joints in order; about one axis they add up). Every tree joint that follows the same dVRK joint as
an earlier one is tied to it by a joint equality, q_k = (w_k / w_r) q_r (``polycoef``), which MuJoCo
enforces as a stiff, critically damped soft constraint (``solref``, ``solimp`` below), not exactly.
Friction on a joint's own coordinate: ``damping`` (Fv), ``frictionloss`` (Fc), ``armature`` (motor
inertia), ``stiffness``/``springref`` (a linear spring); on any other linear coordinate (the MTM's motor 4,
the PSM's wrist motors and jaw): a fixed tendon with the same attributes (MuJoCo docs, "tendon/fixed").
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

from dvrk_ident_ros.export.tree import ROOT, ArmTree, TreeJoint, TreeLink, safe_name
from dvrk_ident_ros.export.urdf import fmt, vec

TIMESTEP = 0.0005
#: joint equalities: time constant 2 ms (4 steps), critically damped; impedance close to a hard constraint
SOLREF = (0.002, 1.0)
SOLIMP = (0.99, 0.999, 0.001, 0.5, 2.0)
#: MuJoCo refuses a moving body without mass and inertia; the links the model gives none carry this much
MASSLESS = 1e-9
MASSLESS_INERTIA = 1e-12
#: Inertia of the direction that breaks a joint equality (a fixed tendon's armature). It is zero along the
#: coupled motion, so the coupled dynamics do not see it; it keeps MuJoCo's tree-space inertia matrix well
#: conditioned where links without inertia (the PSM jaws) would leave that direction with none.
COUPLING_INERTIA = 1e-4


def quaternion(R: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of a rotation matrix (Shepperd's method: largest pivot first)."""
    trace = np.trace(R)
    candidates = [trace, R[0, 0], R[1, 1], R[2, 2]]
    k = int(np.argmax(candidates))
    if k == 0:
        s = 2.0 * np.sqrt(1.0 + trace)
        q = np.array([0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s])
    else:
        i, j, m = k - 1, k % 3, (k + 1) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[m, m])
        q = np.zeros(4)
        q[0] = (R[m, j] - R[j, m]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (R[j, i] + R[i, j]) / s
        q[1 + m] = (R[m, i] + R[i, m]) / s
    return q / np.linalg.norm(q) * (1.0 if q[0] >= 0 else -1.0)


def _body(parent: ET.Element, tree: ArmTree, link: TreeLink, joint_attributes: dict[str, dict[str, str]]
          ) -> ET.Element:
    body = ET.SubElement(parent, "body", name=link.name, pos=vec(link.origin[:3, 3]),
                         quat=vec(quaternion(link.origin[:3, :3])))
    if link.inertial is not None:
        inertia = link.inertial.inertia
        ET.SubElement(body, "inertial", pos=vec(link.inertial.com), mass=fmt(link.inertial.mass),
                      fullinertia=vec([inertia[i, j] for i, j in ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))]))
    elif link.joints:
        ET.SubElement(body, "inertial", pos="0 0 0", mass=fmt(MASSLESS), diaginertia=vec([MASSLESS_INERTIA] * 3))
    for joint in link.joints:
        attributes = {"name": joint.name, "type": "hinge" if joint.kind == "revolute" else "slide", "axis": "0 0 1"}
        limits = tree.limits[joint.dvrk_index]
        if limits is not None:
            attributes["range"] = vec(sorted((joint.multiplier * limits[0], joint.multiplier * limits[1])))
        attributes.update(joint_attributes.get(joint.name, {}))
        ET.SubElement(body, "joint", attributes)
    return body


def _element_attributes(element, spring_key: str) -> dict[str, str]:
    out = {}
    for key, value in (("damping", element.damping), ("frictionloss", element.friction),
                       ("armature", element.armature), ("stiffness", element.stiffness)):
        if value:
            out[key] = fmt(value)
    if element.stiffness:
        out[spring_key] = fmt(element.spring_reference) if spring_key == "springref" else \
            vec([element.spring_reference] * 2)
    return out


def to_mjcf(tree: ArmTree, timestep: float = TIMESTEP) -> str:
    root = ET.Element("mujoco", model=tree.arm)
    root.append(ET.Comment(f" Exported by dvrk_ident from identified parameters of the {tree.arm}. Not held by "
                           "this format: " + ("; ".join(tree.omitted) or "nothing") + ". Joint equalities are "
                           f"soft constraints (solref {vec(SOLREF)}). Links without identified inertia carry "
                           f"{MASSLESS:g} kg (MuJoCo needs a mass on every moving body). "))
    ET.SubElement(root, "compiler", angle="radian", autolimits="true")
    ET.SubElement(root, "option", timestep=fmt(timestep), gravity=vec(tree.gravity), integrator="implicitfast")
    on_joint = {e.on_joint: _element_attributes(e, "springref") for e in tree.elements if e.on_joint}
    bodies: dict[str, ET.Element] = {ROOT: ET.SubElement(root, "worldbody")}
    for link in tree.links:
        bodies[link.name] = _body(bodies[link.parent], tree, link, on_joint)
    first: dict[int, TreeJoint] = {}
    equalities = []
    for joint in tree.joints():
        reference = first.setdefault(joint.dvrk_index, joint)
        if reference is not joint:
            equalities.append((joint, reference))
    tendons = [e for e in tree.elements if not e.on_joint]
    links = {j.name: link for link in tree.links for j in link.joints}
    massless = [(j, r) for j, r in equalities if links[j.name].inertial is None]
    if tendons or massless:
        node = ET.SubElement(root, "tendon")
        for element in tendons:
            fixed = ET.SubElement(node, "fixed", {"name": f"tendon_{safe_name(element.owner)}",
                                                  **_element_attributes(element, "springlength")})
            for joint_name, coefficient in element.terms:
                ET.SubElement(fixed, "joint", joint=joint_name, coef=fmt(coefficient))
        for joint, reference in massless:
            # zero on the constraint manifold: no force, no inertia in the coupled dynamics
            fixed = ET.SubElement(node, "fixed", name=f"violation_{joint.name}", armature=fmt(COUPLING_INERTIA))
            ET.SubElement(fixed, "joint", joint=joint.name, coef=fmt(1.0 / joint.multiplier))
            ET.SubElement(fixed, "joint", joint=reference.name, coef=fmt(-1.0 / reference.multiplier))
    if equalities:
        node = ET.SubElement(root, "equality")
        for joint, reference in equalities:
            ET.SubElement(node, "joint", name=f"couple_{joint.name}", joint1=joint.name, joint2=reference.name,
                          polycoef=vec([0.0, joint.multiplier / reference.multiplier, 0.0, 0.0, 0.0]),
                          solref=vec(SOLREF), solimp=vec(SOLIMP))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"
