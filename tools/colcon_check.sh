#!/usr/bin/env bash
# Build and test dvrk_ident as a lab would: in a colcon workspace (the
# repository under src/), with the project's virtual environment as the ROS 2
# underlay. Usage: tools/colcon_check.sh [WORKSPACE]  (default: a temporary one)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="${DVRK_IDENT_VENV:-$root/.venv}"
ws="${1:-$(mktemp -d /tmp/dvrk_ident_ws.XXXXXX)}"
mkdir -p "$ws/src"
# The repository as git tracks it (plus uncommitted edits), without .venv/build.
rm -rf "$ws/src/dvrk_ident"
mkdir -p "$ws/src/dvrk_ident"
(cd "$root" && git ls-files -co --exclude-standard -z | xargs -0 -I{} cp --parents {} "$ws/src/dvrk_ident/")

export AMENT_PREFIX_PATH="$venv${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export CMAKE_PREFIX_PATH="$venv${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export PATH="$venv/bin:$PATH"
export DVRK_IDENT_COLCON_TEST=1
cd "$ws"
echo "==> colcon build in $ws"
colcon build --event-handlers console_direct- \
    --cmake-args -DPython3_EXECUTABLE="$venv/bin/python" -DBUILD_TESTING=ON
echo "==> colcon test"
colcon test --event-handlers console_direct-
colcon test-result --verbose
test -x "$ws/install/dvrk_ident/lib/dvrk_ident/dvrk-ident"
echo "==> colcon check passed ($ws)"
