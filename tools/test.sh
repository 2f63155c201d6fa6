#!/usr/bin/env bash
# `make test`: ruff, then mypy and pytest side by side (mypy is single-threaded and the suite leaves a
# core idle most of the time; mypy and the colcon workspace build run at low priority so the node tests
# keep theirs). Fails if any fails.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
cd "$root"
"$venv/bin/ruff" check . || exit 1
mkdir -p build
mypy_log=build/mypy.log
nice -n 15 "$venv/bin/mypy" > "$mypy_log" 2>&1 &
mypy_pid=$!
# The colcon workspace build of test_setup_script.py's colcon check, at the lowest priority while the
# first tests run; the test waits for it, then runs colcon test there.
ws="$root/build/colcon-ws"
rm -rf "$ws" "$ws.rc"
( nice -n 19 bash tools/colcon_check.sh --build-only "$ws" > "$ws.log" 2>&1; echo $? > "$ws.rc.tmp" \
  && mv "$ws.rc.tmp" "$ws.rc" ) &
colcon_pid=$!
export DVRK_IDENT_COLCON_WS="$ws"
"$venv/bin/python" -m pytest test "$@"
tests=$?
wait "$mypy_pid"
typing=$?
wait "$colcon_pid" 2>/dev/null
echo "--- mypy (ran beside the tests) ---"
cat "$mypy_log"
if [ "$typing" -ne 0 ]; then echo "make test: mypy FAILED" >&2; fi
if [ "$tests" -ne 0 ]; then echo "make test: pytest FAILED" >&2; fi
[ "$tests" -eq 0 ] && [ "$typing" -eq 0 ]
