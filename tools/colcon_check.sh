#!/usr/bin/env bash
# Build and test dvrk_ident as a lab would: in a colcon workspace (the
# repository under src/), with the project's virtual environment as the ROS 2
# underlay. Usage: tools/colcon_check.sh [--build-only | --test-only] [WORKSPACE]
# (default: both phases, in a temporary workspace; --test-only needs a workspace built by --build-only).
set -euo pipefail
phase=all
case "${1:-}" in
  --build-only) phase=build; shift ;;
  --test-only) phase=test; shift ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$(realpath -m "${DVRK_IDENT_VENV:-$root/.venv}")
# the underlay's ROS 2 distro, as a sourced ROS set-up would export it (make setup records it in the venv)
if [ -f "$venv/.ros-distro" ]; then export ROS_DISTRO; ROS_DISTRO=$(cat "$venv/.ros-distro"); fi
ws="${1:-$(mktemp -d /tmp/dvrk_ident_ws.XXXXXX)}"
export AMENT_PREFIX_PATH="$venv${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export CMAKE_PREFIX_PATH="$venv${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export PATH="$venv/bin:$PATH"
export DVRK_IDENT_COLCON_TEST=1
if [ "$phase" != test ]; then
  mkdir -p "$ws/src"
  # The repository as git tracks it (plus uncommitted edits), without .venv/build.
  rm -rf "$ws/src/dvrk_ident"
  mkdir -p "$ws/src/dvrk_ident"
  (cd "$root" && git ls-files -co --exclude-standard -z | xargs -0 -I{} cp --parents {} "$ws/src/dvrk_ident/")
  cd "$ws"
  echo "==> colcon build in $ws"
  colcon build --event-handlers console_direct- \
      --cmake-args -DPython3_EXECUTABLE="$venv/bin/python" -DBUILD_TESTING=ON
  test -x "$ws/install/dvrk_ident/lib/dvrk_ident/dvrk-ident"
fi
if [ "$phase" != build ]; then
  cd "$ws"
  echo "==> colcon test"
  colcon test --event-handlers console_direct-
  colcon test-result --verbose
  test -x "$ws/install/dvrk_ident/lib/dvrk_ident/dvrk-ident"
fi
echo "==> colcon check ($phase) passed ($ws)"
