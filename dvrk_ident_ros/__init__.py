"""dvrk_ident: dynamic identification and gravity compensation of dVRK arms.

The subpackages other than :mod:`dvrk_ident_ros.nodes` form the ROS-free core
(plain Python, NumPy, SciPy, SymPy, CVXPY); the nodes translate ROS messages
and parameters into calls to it. Generated ROS interfaces live in the separate
module ``dvrk_ident`` (``dvrk_ident.msg``, ``dvrk_ident.srv``,
``dvrk_ident.action``).
"""

__version__ = "0.1.0"  # kept equal to package.xml by test/test_package.py
