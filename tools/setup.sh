#!/usr/bin/env bash
# make setup: a virtual environment that is a ROS 2 Kilted underlay (PyPI
# wheels) with dvrk_ident built and installed into it. Idempotent: each step
# is skipped when its inputs have not changed. A failing step is named.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
venv="${DVRK_IDENT_VENV:-$root/.venv}"
build="$root/build/cmake"
python_bin=${PYTHON:-}
if [ -z "$python_bin" ]; then
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1; then python_bin=$candidate; break; fi
  done
fi

current_step=""
step() { current_step="$1"; echo "==> setup: $1"; }
trap 'status=$?; if [ $status -ne 0 ]; then echo "make setup: FAILED at step \"$current_step\" (exit $status)" >&2; fi' EXIT

stamp_of() { cat "$@" 2>/dev/null | sha256sum | cut -c1-16; }

step "check Python 3.11"
[ -n "$python_bin" ] || { echo "no python3 found" >&2; exit 1; }
"$python_bin" -c 'import sys; assert sys.version_info[:2] == (3, 11), f"Python 3.11 required (the ROS 2 wheels are cp311), found {sys.version.split()[0]}"'

step "create the virtual environment"
[ -x "$venv/bin/python" ] || "$python_bin" -m venv "$venv"

deps_stamp=$(stamp_of requirements.txt constraints.txt)
if [ "$(cat "$venv/.deps-stamp" 2>/dev/null)" != "$deps_stamp" ]; then
  step "install pinned Python packages (requirements.txt, constraints.txt)"
  # (this machine's pip configuration names local indexes that may not exist:
  #  their warnings are noise and are filtered out)
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      -r requirements.txt -c constraints.txt 2>&1 | { grep -v "^WARNING: Location '" || true; }
  step "fix the wheels' CMake export paths"
  "$venv/bin/python" tools/fix_wheel_cmake_exports.py "$venv"
  echo "$deps_stamp" > "$venv/.deps-stamp"
fi

# crtk_msgs (the dVRK's OperatingState, StringStamped) has no wheel: where the underlay lacks it, the
# stand-in in tools/crtk_msgs (same package name, same definitions) is built into the environment.
crtk_stamp=$(stamp_of $(find tools/crtk_msgs -type f | sort))
if [ -f "$venv/.crtk-stamp" ] && [ "$(cat "$venv/.crtk-stamp")" != "$crtk_stamp" ] || \
   { [ ! -f "$venv/.crtk-stamp" ] && ! "$venv/bin/python" -c 'import crtk_msgs.msg' >/dev/null 2>&1; }; then
  step "build the crtk_msgs stand-in (tools/crtk_msgs)"
  mkdir -p "$root/build"
  (export AMENT_PREFIX_PATH="$venv${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
   export CMAKE_PREFIX_PATH="$venv${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
   export PATH="$venv/bin:$PATH"
   cmake -S tools/crtk_msgs -B "$root/build/crtk_msgs" -DCMAKE_INSTALL_PREFIX="$venv" \
       -DCMAKE_PREFIX_PATH="$venv" -DPython3_EXECUTABLE="$venv/bin/python" -DBUILD_TESTING=OFF \
       -DCMAKE_BUILD_TYPE=Release && cmake --build "$root/build/crtk_msgs" -j "$(nproc)" \
       && cmake --install "$root/build/crtk_msgs") > "$root/build/crtk_msgs.log" 2>&1 \
      || { tail -30 "$root/build/crtk_msgs.log" >&2; exit 1; }
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
  mkdir -p "$root/build"
  step "configure with CMake"
  cmake -S . -B "$build" -DCMAKE_INSTALL_PREFIX="$venv" -DCMAKE_PREFIX_PATH="$venv" \
      -DPython3_EXECUTABLE="$venv/bin/python" -DBUILD_TESTING=OFF \
      -DCMAKE_BUILD_TYPE=Release > "$root/build/cmake-configure.log" 2>&1 \
      || { tail -30 "$root/build/cmake-configure.log" >&2; exit 1; }
  step "build the interfaces and the Python package"
  cmake --build "$build" -j "$(nproc)" > "$root/build/cmake-build.log" 2>&1 \
      || { tail -30 "$root/build/cmake-build.log" >&2; exit 1; }
  step "install into the virtual environment"
  cmake --install "$build" > "$root/build/cmake-install.log" 2>&1 \
      || { tail -30 "$root/build/cmake-install.log" >&2; exit 1; }
  step "link the command line and write .venv/setup.bash"
  ln -sf "../lib/dvrk_ident/dvrk-ident" "$venv/bin/dvrk-ident"
  sed "s|@VENV@|$venv|g" tools/setup.bash.in > "$venv/setup.bash"
  echo "$src_stamp" > "$venv/.build-stamp"
fi

step "check the installation"
"$venv/bin/dvrk-ident" doctor --quiet
current_step=""
echo "==> setup: done (.venv ready; 'source .venv/setup.bash', then dvrk-ident, dvrk-ident run <node>, dvrk-ident launch <file>)"
