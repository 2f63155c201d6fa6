#!/usr/bin/env bash
# make setup: a virtual environment that is a ROS 2 underlay made of PyPI wheels, with dvrk_ident built and
# installed into it, and the real ROS 2 command-line tools (ros2 launch/run/param...) beside it.
#   ROS_DISTRO       jazzy (the default; the dVRK 2.4's LTS) or kilted: the wheels of tools/ros/$ROS_DISTRO.txt
#   DVRK_IDENT_VENV  the venv (default .venv); it records its distro in $DVRK_IDENT_VENV/.ros-distro and is never
#                    mixed: a venv of another distro is refused (`make` keeps one venv per distro: .venv for
#                    Jazzy, .venv-kilted for Kilted)
# Idempotent: each step is skipped when its inputs have not changed. A failing step is named.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv=$(realpath -m "${DVRK_IDENT_VENV:-$root/.venv}")
cd "$root"
distro="${ROS_DISTRO:-jazzy}"
# CMake build trees are per venv (a tree caches the prefix it found its packages in): the default .venv keeps
# build/cmake and build/crtk_msgs, any other venv gets a folder of its own under build/.
if [ "$venv" = "$root/.venv" ]; then
  work="$root/build"
else
  name=$(basename "$venv"); work="$root/build/${name#.}-$(printf '%s' "$venv" | sha256sum | cut -c1-8)"
fi
build="$work/cmake"
python_bin=${PYTHON:-}
if [ -z "$python_bin" ]; then
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1; then python_bin=$candidate; break; fi
  done
fi

current_step=""
step() { current_step="$1"; echo "==> setup: $1"; }
ros2_tools_pid=""
# a process and all its descendants (the background ros2 tools build, when a step before it fails)
kill_tree() { local child; for child in $(pgrep -P "$1" || true); do kill_tree "$child"; done; kill "$1" 2>/dev/null || true; }
trap 'status=$?; if [ -n "$ros2_tools_pid" ]; then kill_tree "$ros2_tools_pid"; wait "$ros2_tools_pid" 2>/dev/null || true; fi
      if [ $status -ne 0 ]; then echo "make setup: FAILED at step \"$current_step\" (exit $status)" >&2; fi' EXIT

stamp_of() { cat "$@" 2>/dev/null | sha256sum | cut -c1-16; }
# The ROS 2 distro of an existing venv: its record, else (a venv made before the distro was recorded) the
# distro of its rclpy wheel (ros-rclpy 7.x: Jazzy, 9.x: Kilted); empty when it holds no rclpy wheel.
venv_distro() {
  if [ -f "$venv/.ros-distro" ]; then cat "$venv/.ros-distro"; return; fi
  local site
  for site in "$venv"/lib/python3*/site-packages; do
    if compgen -G "$site/ros_jazzy_rclpy-*.dist-info" >/dev/null || compgen -G "$site/ros_rclpy-7.*.dist-info" >/dev/null; then
      echo jazzy; return
    fi
    if compgen -G "$site/ros_rclpy-9.*.dist-info" >/dev/null; then echo kilted; return; fi
    if compgen -G "$site/ros_rclpy-*.dist-info" >/dev/null; then echo "another (not jazzy or kilted)"; return; fi
  done
}

step "check ROS_DISTRO ($distro)"
case "$distro" in
  jazzy|kilted) ;;
  *) echo "ROS_DISTRO=$distro: make setup builds a ROS 2 venv of jazzy (the default) or kilted only (the distros" \
          "with wheels, tools/ros/*.txt); run it with ROS_DISTRO=jazzy or ROS_DISTRO=kilted (a sourced ROS" \
          "setup sets ROS_DISTRO too)" >&2
     exit 1 ;;
esac
ros_pins="tools/ros/$distro.txt"
[ -f "$ros_pins" ] || { echo "$ros_pins is missing" >&2; exit 1; }

step "check Python 3.11"
[ -n "$python_bin" ] || { echo "no python3 found" >&2; exit 1; }
"$python_bin" -c 'import sys; assert sys.version_info[:2] == (3, 11), f"Python 3.11 required (the ROS 2 wheels are cp311), found {sys.version.split()[0]}"'

step "check the virtual environment's ROS 2 distro"
if [ -x "$venv/bin/python" ]; then
  have=$(venv_distro)
  if [ -n "$have" ] && [ "$have" != "$distro" ]; then
    how="recorded in $venv/.ros-distro"
    [ -f "$venv/.ros-distro" ] || how="its rclpy wheel; made before make setup recorded the distro"
    echo "$venv is a ROS 2 $have venv ($how), ROS_DISTRO=$distro asks for $distro: distros are not mixed in one" \
         "venv. Use another venv for $distro (DVRK_IDENT_VENV=...; make keeps .venv for jazzy and .venv-kilted" \
         "for kilted), or remove this one (rm -rf $venv) to rebuild it as $distro" >&2
    exit 1
  fi
fi

step "create the virtual environment"
[ -x "$venv/bin/python" ] || "$python_bin" -m venv "$venv"
[ "$(cat "$venv/.ros-distro" 2>/dev/null)" = "$distro" ] || echo "$distro" > "$venv/.ros-distro"

deps_stamp=$(stamp_of requirements.txt "$ros_pins" constraints.txt)
if [ "$(cat "$venv/.deps-stamp" 2>/dev/null)" != "$deps_stamp" ]; then
  step "install pinned Python packages (requirements.txt, $ros_pins, constraints.txt)"
  # uv (pinned in requirements.txt) installs the same pinned set as pip, downloading and unpacking in
  # parallel; pip does it alone where uv cannot be installed. (This machine's pip configuration names local
  # indexes that may not exist: their warnings are noise and are filtered out.)
  uv_pin=$(grep -E '^uv==' requirements.txt)
  if "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$uv_pin" 2>&1 \
        | { grep -v "^WARNING: Location '" || true; } && [ -x "$venv/bin/uv" ]; then
    "$venv/bin/uv" pip install --quiet --python "$venv/bin/python" --compile-bytecode \
        -r requirements.txt -r "$ros_pins" -c constraints.txt
  else
    echo "  ($uv_pin could not be installed: pip installs the pinned set)"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r requirements.txt -r "$ros_pins" -c constraints.txt 2>&1 | { grep -v "^WARNING: Location '" || true; }
  fi
  step "fix the wheels' CMake export paths"
  "$venv/bin/python" tools/fix_wheel_cmake_exports.py "$venv"
  echo "$deps_stamp" > "$venv/.deps-stamp"
fi

# The real ROS 2 command line (launch, launch_ros, ros2cli from ../shared/vendor/ros2-tools, built into
# $venv/opt/ros2-tools, `ros2` in $venv/bin; without ../shared it says so in one line and goes on): it needs
# only the wheels, so it builds in the background while crtk_msgs and dvrk_ident build (its output is shown
# when it is waited for, below).
mkdir -p "$work"
bash tools/ros2_tools.sh "$venv" "$work/ros2-tools" > "$work/ros2-tools.out" 2>&1 &
ros2_tools_pid=$!

# crtk_msgs (the dVRK's OperatingState, StringStamped) has no wheel: where the underlay lacks it, the
# stand-in in tools/crtk_msgs (same package name, same definitions) is built into the environment.
crtk_stamp=$(stamp_of $(find tools/crtk_msgs -type f | sort))
if [ -f "$venv/.crtk-stamp" ] && [ "$(cat "$venv/.crtk-stamp")" != "$crtk_stamp" ] || \
   { [ ! -f "$venv/.crtk-stamp" ] && ! "$venv/bin/python" -c 'import crtk_msgs.msg' >/dev/null 2>&1; }; then
  step "build the crtk_msgs stand-in (tools/crtk_msgs)"
  mkdir -p "$work"
  (export AMENT_PREFIX_PATH="$venv${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
   export CMAKE_PREFIX_PATH="$venv${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
   export PATH="$venv/bin:$PATH"
   cmake -S tools/crtk_msgs -B "$work/crtk_msgs" -DCMAKE_INSTALL_PREFIX="$venv" \
       -DCMAKE_PREFIX_PATH="$venv" -DPython3_EXECUTABLE="$venv/bin/python" -DBUILD_TESTING=OFF \
       -DCMAKE_BUILD_TYPE=Release && cmake --build "$work/crtk_msgs" -j "$(nproc)" \
       && cmake --install "$work/crtk_msgs") > "$work/crtk_msgs.log" 2>&1 \
      || { tail -30 "$work/crtk_msgs.log" >&2; exit 1; }
  "$venv/bin/python" -c 'import crtk_msgs.msg' || { echo "crtk_msgs built but does not import" >&2; exit 1; }
  echo "$crtk_stamp" > "$venv/.crtk-stamp"
fi

src_stamp=$(stamp_of CMakeLists.txt package.xml setup.cfg setup.py \
    $(find msg srv action dvrk_ident_ros launch config tools -type f \
        ! -name '*.pyc' ! -path '*/__pycache__/*' | sort))
if [ "$(cat "$venv/.build-stamp" 2>/dev/null)" != "$src_stamp" ] || \
   [ ! -x "$venv/lib/dvrk_ident/dvrk-ident" ]; then
  step "check package.xml"
  "$venv/bin/python" -c 'from catkin_pkg.package import parse_package; p = parse_package("package.xml"); p.validate(); print(f"  {p.name} {p.version}")'

  export AMENT_PREFIX_PATH="$venv${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
  export CMAKE_PREFIX_PATH="$venv${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export PATH="$venv/bin:$PATH"
  mkdir -p "$work"
  step "configure with CMake"
  cmake -S . -B "$build" -DCMAKE_INSTALL_PREFIX="$venv" -DCMAKE_PREFIX_PATH="$venv" \
      -DPython3_EXECUTABLE="$venv/bin/python" -DBUILD_TESTING=OFF \
      -DCMAKE_BUILD_TYPE=Release > "$work/cmake-configure.log" 2>&1 \
      || { tail -30 "$work/cmake-configure.log" >&2; exit 1; }
  step "build the interfaces and the Python package"
  cmake --build "$build" -j "$(nproc)" > "$work/cmake-build.log" 2>&1 \
      || { tail -30 "$work/cmake-build.log" >&2; exit 1; }
  step "install into the virtual environment"
  cmake --install "$build" > "$work/cmake-install.log" 2>&1 \
      || { tail -30 "$work/cmake-install.log" >&2; exit 1; }
  step "link the command line and write $(basename "$venv")/setup.bash"
  ln -sf "../lib/dvrk_ident/dvrk-ident" "$venv/bin/dvrk-ident"
  sed -e "s|@VENV@|$venv|g" -e "s|@ROS_DISTRO@|$distro|g" tools/setup.bash.in > "$venv/setup.bash"
  echo "$src_stamp" > "$venv/.build-stamp"
fi

step "the real ROS 2 command-line tools (tools/ros2_tools.sh, built beside the steps above)"
ros2_tools_status=0
wait "$ros2_tools_pid" || ros2_tools_status=$?
ros2_tools_pid=""
cat "$work/ros2-tools.out"
[ "$ros2_tools_status" -eq 0 ] || exit "$ros2_tools_status"

step "check the installation"
"$venv/bin/dvrk-ident" doctor --quiet
current_step=""
rel=${venv#"$root/"}
echo "==> setup: done ($rel ready, ROS 2 $distro; 'source $rel/setup.bash', then dvrk-ident, dvrk-ident run <node>," \
     "dvrk-ident launch <file>$([ -x "$venv/bin/ros2" ] && echo ', ros2 launch dvrk_ident <file>'))"
