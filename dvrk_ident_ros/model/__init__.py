"""The physics core: arm descriptions, the symbolic dynamic model, base parameters.

ROS-free. Entry point: :func:`dvrk_ident_ros.model.arm_model.load_model`.
"""
