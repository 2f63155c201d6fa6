#!/usr/bin/env bash
# `make test`: ruff, then mypy and pytest side by side (mypy is single-threaded and the suite leaves a
# core idle most of the time; mypy and the colcon workspace build run at low priority so the node tests
# keep theirs); without arguments, the node tests and the core's tests run side by side (below). Fails if
# any fails.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# the venv of `make setup` (DVRK_IDENT_VENV, as tools/setup.sh takes it; `make test ROS_DISTRO=kilted` passes
# .venv-kilted): its outputs under build/ carry its name unless it is the default .venv, so runs on two venvs
# (Jazzy, Kilted) do not share a log or a colcon workspace
venv=$(realpath -m "${DVRK_IDENT_VENV:-$root/.venv}")
cd "$root"
export DVRK_IDENT_VENV="$venv"
tag=""
if [ "$venv" != "$root/.venv" ]; then name=$(basename "$venv"); tag="-${name#.}"; fi
if [ ! -x "$venv/bin/python" ]; then echo "$venv/bin/python does not exist: run make setup first" >&2; exit 1; fi
# the tests run on this venv's ROS 2: its distro (recorded by make setup) is the one they, and the set-up script
# that test_setup_script.py runs on this venv, see
if [ -f "$venv/.ros-distro" ]; then export ROS_DISTRO; ROS_DISTRO=$(cat "$venv/.ros-distro"); fi
"$venv/bin/ruff" check . || exit 1
mkdir -p build
mypy_log=build/mypy$tag.log
nice -n 15 "$venv/bin/mypy" > "$mypy_log" 2>&1 &
mypy_pid=$!
# The colcon workspace build of test_setup_script.py's colcon check, at the lowest priority while the
# first tests run; the test waits for it, then runs colcon test there.
ws="$root/build/colcon-ws$tag"
rm -rf "$ws" "$ws.rc"
( nice -n 19 bash tools/colcon_check.sh --build-only "$ws" > "$ws.log" 2>&1; echo $? > "$ws.rc.tmp" \
  && mv "$ws.rc.tmp" "$ws.rc" ) &
colcon_pid=$!
export DVRK_IDENT_COLCON_WS="$ws"
if [ $# -gt 0 ]; then
  # arguments (a test, -k, --durations...): one pytest run, as asked
  "$venv/bin/python" -m pytest test "$@"
  tests=$?
else
  # The whole suite: the node tests (`ros`: nodes in subprocesses, timed) in the foreground on two
  # pytest-xdist workers (the nodes mostly wait on each other and on the clock: one run of them leaves
  # much of a core idle, docs/results.md), and beside them the core's tests (CPU-bound, untimed) at idle priority, so
  # that they only take the CPU the node tests leave. Disjoint ROS_DOMAIN_ID ranges keep the runs' nodes
  # apart (each xdist worker takes its own slice of the node tests' range: test/conftest.py).
  # DVRK_IDENT_NODE_WORKERS=1 runs the node tests in one process, as before.
  idle() { if chrt -i 0 true 2>/dev/null; then chrt -i 0 "$@"; else nice -n 19 "$@"; fi; }
  core_log=build/pytest-core$tag.log
  DVRK_IDENT_TEST_DOMAINS=71:100 idle "$venv/bin/python" -m pytest test -m "not ros" -p no:cacheprovider --durations=10 \
      > "$core_log" 2>&1 &
  core_pid=$!
  workers=${DVRK_IDENT_NODE_WORKERS:-2}
  spread=()
  # loadfile: a test file's tests stay on one worker, in order (test_docs.py's blocks build on each other)
  if [ "$workers" -gt 1 ]; then spread=(-n "$workers" --dist loadfile); fi
  # The node tests time real processes on a shared machine: a test that fails once under load gets one more
  # run (pytest-rerunfailures; the summary counts the reruns, R): twice is a failure.
  DVRK_IDENT_TEST_DOMAINS=1:70 "$venv/bin/python" -m pytest test -m ros --durations=10 --reruns 1 --reruns-delay 2 -rR \
      "${spread[@]}"
  node_tests=$?
  wait "$core_pid"
  core_tests=$?
  echo "--- the core's tests (pytest -m 'not ros', ran beside the node tests at idle priority) ---"
  cat "$core_log"
  tests=$(( node_tests != 0 || core_tests != 0 ))
  if [ "$node_tests" -ne 0 ]; then echo "make test: the node tests (pytest -m ros) FAILED" >&2; fi
  if [ "$core_tests" -ne 0 ]; then echo "make test: the core's tests (pytest -m 'not ros') FAILED" >&2; fi
fi
wait "$mypy_pid"
typing=$?
wait "$colcon_pid" 2>/dev/null
echo "--- mypy (ran beside the tests) ---"
cat "$mypy_log"
if [ "$typing" -ne 0 ]; then echo "make test: mypy FAILED" >&2; fi
if [ "$tests" -ne 0 ]; then echo "make test: pytest FAILED" >&2; fi
[ "$tests" -eq 0 ] && [ "$typing" -eq 0 ]
