"""Node ``identification_service``: the ``/identify`` service (dvrk_ident/srv/Identify).

Runs the same jobs as the CLI (:mod:`dvrk_ident_ros.jobs`): sdp / wls / ols
identification from recordings, or mlse for the MTM gravity compensation.
The job runs in its own executor thread (reentrant callback group), so the
node keeps serving; a request that arrives while a job runs is refused with
a clear message (or waits its turn with ``allow_queue``). Every failure is an
answer with ``success = false`` and one line naming the file, field or stage;
a failed job writes no result file.
"""
from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from dvrk_ident.msg import StageTiming
from dvrk_ident.srv import Identify
from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.nodes.common import declare, run

METHODS = ("sdp", "wls", "ols", "mlse")


class IdentificationServiceNode(Node):
    def __init__(self) -> None:
        super().__init__("identification_service")
        self.output_directory = Path(declare(self, "output_directory", "identification"))
        self.allow_queue = bool(declare(self, "allow_queue", False))
        self._job = threading.Lock()
        self._current = ""
        self.create_service(Identify, "/identify", self._serve, callback_group=ReentrantCallbackGroup())
        self.get_logger().info(f"/identify ready (results in {self.output_directory}/)")

    def _serve(self, request: Identify.Request, response: Identify.Response) -> Identify.Response:
        if not self._job.acquire(blocking=self.allow_queue):
            response.success = False
            response.solver_status = "not_run"
            response.message = f"busy: {self._current} is running; try again when it is done"
            self.get_logger().warning(f"/identify refused ({response.message})")
            return response
        try:
            self._current = f"{request.method} on {len(request.data_files)} file(s)"
            return self._run(request, response)
        finally:
            self._current = ""
            self._job.release()

    def _run(self, request: Identify.Request, response: Identify.Response) -> Identify.Response:
        from dvrk_ident_ros.jobs import gc_fit_job, identification_job

        start = time.perf_counter()
        method = request.method.lower() or "sdp"
        response.solver_status = "not_run"
        try:
            if method not in METHODS:
                raise DvrkIdentError(f"unknown method {request.method!r} (known: {', '.join(METHODS)})")
            if not request.data_files:
                raise DvrkIdentError("no data_files given")
            if request.model_file:
                raise DvrkIdentError("model_file: custom arm descriptions are not supported by the service yet; "
                                     "use the built-in mtm/psm")
            if request.overrides_yaml:
                raise DvrkIdentError("overrides_yaml: settings overrides are not supported by the service yet")
            for f in request.data_files:
                if not Path(f).exists():
                    raise DvrkIdentError(f"{f}: no such file or bag")
            out_dir = Path(request.output_directory or self.output_directory)
            out_dir.mkdir(parents=True, exist_ok=True)
            stamp = time.strftime("%Y%m%d-%H%M%S")
            arm = request.arm.lower()
            self.get_logger().info(f"/identify: {method} for {arm or '?'} on {', '.join(request.data_files)}")
            if method == "mlse":
                if len(request.data_files) != 1:
                    raise DvrkIdentError("mlse takes one pose-grid bag or CUHK directory")
                side = arm.upper() if arm.upper() in ("MTML", "MTMR") else None
                outcome = gc_fit_job(request.data_files[0], side, out_dir / f"gc-{side or 'MTM'}-{stamp}.json")
            else:
                family = "psm" if arm.startswith("psm") else "mtm" if arm.startswith("mtm") else arm
                fmt = request.data_format or None
                outcome = identification_job(family, list(request.data_files), method,
                                             out_dir / f"{family}-{method}-{stamp}.json", fmt)
        except DvrkIdentError as exc:
            response.success = False
            response.message = str(exc)
            self.get_logger().error(f"/identify failed: {exc}")
            return response
        except Exception as exc:  # noqa: BLE001 - the node answers every request, even on a bug
            response.success = False
            response.message = f"internal error ({type(exc).__name__}): {exc}"
            self.get_logger().error(f"/identify: {response.message}")
            return response
        response.success = True
        response.message = outcome.summary
        response.result_file = str(outcome.result_file)
        response.report_file = str(outcome.report_file or "")
        response.joint_names = outcome.joint_names[:len(outcome.relative_error)]
        response.relative_error = outcome.relative_error
        response.parameter_names = outcome.parameter_names
        response.parameter_values = outcome.parameter_values
        response.solver_status = outcome.solver_status
        timings = dict(outcome.timings, total=time.perf_counter() - start)
        response.timings = [StageTiming(stage=k, seconds=float(v)) for k, v in timings.items()]
        self.get_logger().info(f"/identify: {outcome.summary} -> {outcome.result_file} "
                               f"({timings['total']:.1f} s)")
        return response


def main(args: list[str] | None = None) -> int:
    return run(IdentificationServiceNode, args, executor="multi")


if __name__ == "__main__":
    sys.exit(main())
