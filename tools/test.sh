#!/usr/bin/env bash
# `make test`: ruff, then mypy and pytest side by side (mypy is single-threaded and the suite leaves a
# core idle most of the time; mypy runs at low priority so the node tests keep theirs). Fails if any fails.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
cd "$root"
"$venv/bin/ruff" check . || exit 1
mkdir -p build
mypy_log=build/mypy.log
nice -n 15 "$venv/bin/mypy" > "$mypy_log" 2>&1 &
mypy_pid=$!
"$venv/bin/python" -m pytest test "$@"
tests=$?
wait "$mypy_pid"
typing=$?
echo "--- mypy (ran beside the tests) ---"
cat "$mypy_log"
if [ "$typing" -ne 0 ]; then echo "make test: mypy FAILED" >&2; fi
if [ "$tests" -ne 0 ]; then echo "make test: pytest FAILED" >&2; fi
[ "$tests" -eq 0 ] && [ "$typing" -eq 0 ]
