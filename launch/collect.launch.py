"""Collect identification data: play a trajectory on an arm and record it.

    ros2 launch dvrk_ident collect.launch.py arm:=PSM1 sim:=true [sim_rate:=1000.0]
    ros2 launch dvrk_ident collect.launch.py arm:=MTML trajectory_file:=config/grids/mtml_gc_grid.yaml

Starts ``trajectory_player`` (config/trajectory_player.yaml) and ``recorder``
(config/recorder.yaml); with ``sim:=true`` also a simulated arm publishing
/clock, and every node then uses sim time. The player moves nothing until the
arm is ENABLED, homed and idle: on a real arm, power it on and home it from the
console (or ``home_arm:=true``, which sends enable and home itself); the
simulated arm starts DISABLED and unhomed like a freshly started console, and
``sim:=true`` homes it (``home_arm`` defaults to ``sim``).

``autostart:=true`` (the default): the player plays ``trajectory_file`` and
exits; the whole launch then shuts down (the recorder closes its bag: renamed
``<bag>-FAILED`` after an aborted run, removed when nothing was played) and
ends with the player's verdict: ``ros2 launch`` exits 0 when the trajectory was
played, non-zero when the player (or any other node) failed.
``autostart:=false``: the player waits for ``/<ARM>/play_trajectory`` action
goals and the launch runs until Ctrl-C.

``trajectory_file``: empty picks the shipped Fourier trajectory of the arm
family; a relative path is taken from the working directory, else from the
installed package share (so ``config/grids/mtml_gc_grid.yaml`` works anywhere);
a file found nowhere stops the launch before any node starts. ``arm`` in any
case (``psm1``); booleans true/false/1/0 in any case.
"""
from dvrk_ident_ros.jobs.launch_support import launch_description


def generate_launch_description():
    """The arguments and nodes of dvrk_ident_ros/jobs/launch_plans.py's "collect" (the plan
    `dvrk-ident launch collect` runs too)."""
    return launch_description("collect")
