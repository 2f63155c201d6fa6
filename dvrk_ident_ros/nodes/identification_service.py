"""Node ``identification_service``: the ``/identify`` service (dvrk_ident/srv/Identify).

Runs the same jobs as the CLI (:mod:`dvrk_ident_ros.jobs.offline`) with any estimator of
the registry (:mod:`dvrk_ident_ros.estimators`) the arm lists: sdp / wls / ols
identification from recordings, or mlse / slse for the MTM gravity compensation.
The job runs in its own executor thread (reentrant callback group), so the
node keeps serving; a request that arrives while a job runs is refused with
a clear message (or waits its turn with ``allow_queue``). Every failure is an
answer with ``success = false`` and one line naming the file, field or stage;
a failed job writes no result file.

What a request may touch (:mod:`dvrk_ident_ros.request_paths`): it writes only
inside the node's ``output_directory`` (a request's ``output_directory`` is a
relative path inside it; absolute paths and paths leaving it are refused), and
reads only existing regular files or directories (inside ``data_directory``
when that parameter is set). The arm is read in any case and reported
canonically (``psm1`` -> PSM1) in the answer, the file names and the log.
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
from dvrk_ident_ros.errors import DvrkIdentError, PathRefusedError
from dvrk_ident_ros.identify_request import canonical_summary, plan_request
from dvrk_ident_ros.parameters.identification_service import SCHEMA
from dvrk_ident_ros.parameters.settings import IdentificationServiceSettings
from dvrk_ident_ros.ros.parameters import declare_parameters
from dvrk_ident_ros.ros.process import run


class IdentificationServiceNode(Node):
    def __init__(self) -> None:
        super().__init__("identification_service")
        params = declare_parameters(self, SCHEMA, on_change={"allow_queue": self._set_allow_queue})
        settings = IdentificationServiceSettings.from_values(params)
        # resolved once: a request writes only inside this directory (dvrk_ident_ros.request_paths)
        self.output_directory = Path(settings.output_directory).expanduser().resolve()
        data_directory = settings.data_directory.strip()
        self.data_directory = Path(data_directory).expanduser().resolve() if data_directory else None
        self.allow_queue = settings.allow_queue
        self._job = threading.Lock()
        self._current = ""
        self.create_service(Identify, "/identify", self._serve, callback_group=ReentrantCallbackGroup())
        reads = f"data under {self.data_directory}/" if self.data_directory else "data anywhere this user can read"
        self.get_logger().info(f"/identify ready (results only under {self.output_directory}/; {reads})")

    def _set_allow_queue(self, value: bool) -> None:
        """Run time: from the next request on (a job under way is not touched)."""
        self.allow_queue = value

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
        from dvrk_ident_ros.jobs.offline import gc_fit_job, identification_job

        start = time.perf_counter()
        response.solver_status = "not_run"
        try:
            # every check (arm, method, what may be read and written) before anything touches the disk
            plan = plan_request(arm=request.arm, method=request.method, data_files=list(request.data_files),
                                data_format=request.data_format, model_file=request.model_file,
                                overrides_yaml=request.overrides_yaml, output_directory=request.output_directory,
                                output_base=self.output_directory, data_directory=self.data_directory)
            self.get_logger().info(f"/identify: {plan.describe()} -> {plan.output_directory}/")
            plan.output_directory.mkdir(parents=True, exist_ok=True)
            if not plan.output_directory.resolve().is_relative_to(self.output_directory):  # a link appeared meanwhile
                raise PathRefusedError(f"{plan.output_directory} now leads outside {self.output_directory}: "
                                       "nothing written")
            result_file = plan.result_file(time.strftime("%Y%m%d-%H%M%S"))
            if plan.gravity:
                outcome = gc_fit_job(plan.data_files[0], plan.mtm_side, result_file, method=plan.method)
            else:
                outcome = identification_job(plan.family, plan.data_files, plan.method, result_file, plan.data_format)
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
        response.message = canonical_summary(outcome.summary, outcome.arm if plan.gravity else plan.arm)
        response.result_file = str(outcome.result_file)
        response.report_file = str(outcome.report_file or "")
        response.joint_names = outcome.joint_names[:len(outcome.relative_error)]
        response.relative_error = outcome.relative_error
        response.parameter_names = outcome.parameter_names
        response.parameter_values = outcome.parameter_values
        response.solver_status = outcome.solver_status
        timings = dict(outcome.timings, total=time.perf_counter() - start)
        response.timings = [StageTiming(stage=k, seconds=float(v)) for k, v in timings.items()]
        self.get_logger().info(f"/identify: {response.message} -> {outcome.result_file} "
                               f"({timings['total']:.1f} s)")
        return response


def main(args: list[str] | None = None) -> int:
    return run(IdentificationServiceNode, args, executor="multi")


if __name__ == "__main__":
    sys.exit(main())
