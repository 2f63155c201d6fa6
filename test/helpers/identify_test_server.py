"""Test helper: an /identify server whose answer is a checkable function of the request.

Not the identification service: it only proves the interface works across
processes (request fields in, every response field out).
"""
import sys

import rclpy
from spin import spin_until_interrupted

from dvrk_ident.msg import StageTiming
from dvrk_ident.srv import Identify


def answer(request: Identify.Request, response: Identify.Response) -> Identify.Response:
    n = len(request.data_files)
    response.success = request.method in ("sdp", "wls", "ols", "mlse")
    response.message = f"{request.arm}/{request.method}/{request.data_format}/{n}"
    response.result_file = f"{request.output_directory}/params.yaml"
    response.report_file = f"{request.output_directory}/report.txt"
    response.joint_names = [f"j{i}" for i in range(n)]
    response.relative_error = [0.1 * (i + 1) for i in range(n)]
    response.parameter_names = ["m1", "L1xx"]
    response.parameter_values = [1.5, -2.25]
    response.solver_status = "optimal" if response.success else "not_run"
    response.timings = [StageTiming(stage="solve", seconds=0.125)]
    return response


def main() -> int:
    rclpy.init()
    node = rclpy.create_node("identify_test_server")
    node.create_service(Identify, "/identify", answer)
    return spin_until_interrupted(node)


if __name__ == "__main__":
    sys.exit(main())
