"""URDF of an export tree: links with identified inertials, the dVRK joints, mimic joints for the rest.

As the dVRK's own URDFs (jhu-dvrk/dvrk_model) do for the parallelograms and the jaw: a joint that moves with
a dVRK joint is ``<mimic joint=... multiplier=.../>``. A frame that moves with two dVRK joints (the MTM's
parallelogram back link: shoulder + elbow pitch) is a chain of mimic joints through massless links. A dVRK
joint that no frame follows one to one (the PSM jaw) gets a massless link of its own so that its mimics have
a joint to follow. ``<dynamics damping friction>``: Fv, Fc of friction on a joint's own coordinate.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np

from dvrk_ident_ros.export.tree import ROOT, ArmTree, TreeJoint, TreeLink

#: URDF requires an effort limit; the descriptions carry no motor torque limits.
EFFORT = 1000.0


def fmt(x: float) -> str:
    return repr(float(x))


def vec(values) -> str:
    return " ".join(fmt(v) for v in values)


def rpy_from_matrix(R: np.ndarray) -> tuple[float, float, float]:
    """URDF's fixed-axis roll, pitch, yaw with R = Rz(yaw) Ry(pitch) Rx(roll)."""
    cp = math.hypot(R[0, 0], R[1, 0])
    pitch = math.atan2(-R[2, 0], cp)
    if cp > 1e-9:
        return math.atan2(R[2, 1], R[2, 2]), pitch, math.atan2(R[1, 0], R[0, 0])
    # gimbal lock: yaw = 0, roll from the first two rows
    roll = math.atan2(R[0, 1], R[1, 1]) if R[2, 0] < 0 else math.atan2(-R[0, 1], R[1, 1])
    return roll, pitch, 0.0


def _origin(parent: ET.Element, T: np.ndarray) -> None:
    rpy = [0.0 if abs(x) < 1e-15 else x for x in rpy_from_matrix(T[:3, :3])]
    ET.SubElement(parent, "origin", xyz=vec(T[:3, 3]), rpy=vec(rpy))


def _inertial(link: ET.Element, tree_link: TreeLink) -> None:
    if tree_link.inertial is None:
        return
    inertial = tree_link.inertial
    node = ET.SubElement(link, "inertial")
    ET.SubElement(node, "origin", xyz=vec(inertial.com), rpy="0 0 0")
    ET.SubElement(node, "mass", value=fmt(inertial.mass))
    inertia = inertial.inertia
    axes = {"x": 0, "y": 1, "z": 2}
    ET.SubElement(node, "inertia", {f"i{a}{b}": fmt(inertia[axes[a], axes[b]])
                                    for a, b in (("x", "x"), ("x", "y"), ("x", "z"), ("y", "y"), ("y", "z"),
                                                 ("z", "z"))})


def _limit(node: ET.Element, tree: ArmTree, joint: TreeJoint) -> None:
    limits = tree.limits[joint.dvrk_index]
    lo, hi, speed = limits if limits is not None else (-math.pi, math.pi, 10.0)
    lo, hi = sorted((joint.multiplier * lo, joint.multiplier * hi))
    ET.SubElement(node, "limit", lower=fmt(lo), upper=fmt(hi), effort=fmt(EFFORT),
                  velocity=fmt(abs(joint.multiplier) * speed))


def to_urdf(tree: ArmTree) -> str:
    robot = ET.Element("robot", name=tree.arm)
    robot.append(ET.Comment(f" Exported by dvrk_ident from identified parameters of the {tree.arm}. Not held by "
                            "this format: " + ("; ".join(tree.omitted) or "nothing") + ". "))
    ET.SubElement(robot, "link", name=ROOT)
    masters = tree.masters()
    joint_dynamics = {e.on_joint: e for e in tree.elements if e.on_joint}
    virtual_done: set[int] = set()
    for link in tree.links:
        _inertial(ET.SubElement(robot, "link", name=link.name), link)
        if not link.joints:
            node = ET.SubElement(robot, "joint", name=f"fixed_{link.name[5:]}", type="fixed")
            ET.SubElement(node, "parent", link=link.parent)
            ET.SubElement(node, "child", link=link.name)
            _origin(node, link.origin)
            continue
        parent = link.parent
        for k, joint in enumerate(link.joints):
            if joint.dvrk_index not in masters and joint.dvrk_index not in virtual_done:
                _virtual_master(robot, tree, joint, parent, link.origin if k == 0 else np.eye(4))
                virtual_done.add(joint.dvrk_index)
            last = k == len(link.joints) - 1
            child = link.name if last else f"{link.name}_{joint.name}"
            if not last:
                ET.SubElement(robot, "link", name=child)
            node = ET.SubElement(robot, "joint", name=joint.name, type=joint.kind)
            ET.SubElement(node, "parent", link=parent)
            ET.SubElement(node, "child", link=child)
            _origin(node, link.origin if k == 0 else np.eye(4))
            ET.SubElement(node, "axis", xyz="0 0 1")
            _limit(node, tree, joint)
            if not joint.master:
                master = masters.get(joint.dvrk_index)
                ET.SubElement(node, "mimic", joint=master.name if master else tree.dvrk_joint_names[joint.dvrk_index],
                              multiplier=fmt(joint.multiplier), offset="0")
            element = joint_dynamics.get(joint.name)
            if element is not None and (element.damping or element.friction):
                ET.SubElement(node, "dynamics", damping=fmt(element.damping), friction=fmt(element.friction))
            parent = child
    ET.indent(robot)
    return '<?xml version="1.0"?>\n' + ET.tostring(robot, encoding="unicode") + "\n"


def _virtual_master(robot: ET.Element, tree: ArmTree, joint: TreeJoint, parent: str, origin: np.ndarray) -> None:
    """A massless link on a joint whose value is the dVRK joint, for mimics to follow."""
    name = tree.dvrk_joint_names[joint.dvrk_index]
    ET.SubElement(robot, "link", name=f"{name}_link")
    node = ET.SubElement(robot, "joint", name=name, type=joint.kind)
    ET.SubElement(node, "parent", link=parent)
    ET.SubElement(node, "child", link=f"{name}_link")
    _origin(node, origin)
    ET.SubElement(node, "axis", xyz="0 0 1")
    _limit(node, tree, TreeJoint(name, joint.kind, joint.dvrk_index, 1.0, True))
