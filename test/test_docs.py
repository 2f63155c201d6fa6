"""The documentation as a tested contract (issue 33): every shell block of README.md, launch/README.md and
docs/*.md runs as a user types it, or says visibly why it cannot.

Blocks are extracted with pytest-codeblocks (``extract_from_file``: fenced blocks, their language, line and
marks). Its own runner (``pytest --codeblocks``) runs a block in pytest's working directory with pytest's
environment; these blocks must run as a user's shell runs them, so each runs here instead: in a scratch
directory of its own, with the data it names staged there (from ../shared), in a bash that sourced
``.venv/setup.bash`` (the README's first step), on a ROS domain of its own, under ``set -e``. A block
passes when every command in it succeeds and the output holds what the text promises (:data:`PROMISES`).

A document's blocks run in order in one directory, as a reader goes through it (a later block uses the
files an earlier one wrote). A block that starts with ``# runs until Ctrl-C`` (a launch, a node) must still
run after a few seconds, then end cleanly on SIGINT. A ``python`` block runs in ``python``. ``ros2`` blocks
run the real ros2 tools (`make setup` builds them from ../shared/vendor/ros2-tools) and skip, saying so,
where they are not built.

The blocks start nodes that run on the clock (a simulated arm, a collect in sim time), so the module is
marked ``ros``: ``make test`` runs it with the node tests at normal priority, not at idle priority beside
them (there a sim-time collect ran at a third of real time and its player aborted).

A block that cannot run here starts with a comment line that says why, which the reader sees:
``# not run by the tests: <reason>`` (a real arm, a lab's ROS workspace, the suite itself); one that another
test runs as it stands (a long job, checked there in detail) says ``# run by test/<file>.py``, and that file
must hold the block's commands. Fenced blocks
of other languages (``text``: output, file layouts) are not commands, and no indented code block may hold
one.
"""
from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO_ROOT, SHARED, next_domain_id

pytestmark = pytest.mark.ros  # see the module's docstring: with the node tests

pytest_codeblocks = pytest.importorskip("pytest_codeblocks", reason="pytest-codeblocks is not installed")

#: The documents whose commands are a contract.
DOCUMENTS = ["README.md", "launch/README.md", *sorted(str(p.relative_to(REPO_ROOT))
                                                     for p in (REPO_ROOT / "docs").glob("**/*.md")
                                                     if not p.is_symlink())]  # docs/index.md is the README
SHELL = ("bash", "sh", "console", "shell")
RUN = (*SHELL, "python")
NOT_RUN = "# not run by the tests:"
RUN_BY = "# run by test/"
UNTIL_CTRL_C = "# runs until Ctrl-C"
TIMEOUT = 600.0
#: s a "runs until Ctrl-C" block must keep running before it is sent SIGINT, and may take to end after it.
RUNNING_FOR, STOP_WITHIN = 8.0, 30.0

def _one_clock_complete_bag(directory: Path, output: str) -> None:
    """A simulated collect's bag: complete, and on one clock (sim time from start to end, not 57 years)."""
    import yaml

    bags = sorted((directory / "recordings").glob("PSM1-*"))
    assert len(bags) == 1 and not bags[0].name.endswith(("-FAILED", "-INCOMPLETE")), (bags, output)
    info = yaml.safe_load((bags[0] / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["custom_data"]["dvrk_ident.outcome"] == "complete", info["custom_data"]
    assert 10e9 < info["duration"]["nanoseconds"] < 600e9, info["duration"]


#: What a block's text promises, keyed by its document and a fragment of the block: files it must leave in
#: its directory, patterns its output must hold, a check of what it made. Every key must match a block run by
#: the tests (checked below).
PROMISES: dict[tuple[str, str], dict[str, Any]] = {
    ("docs/gravity-compensation.md", "dvrk-ident gc fit --data MTML-41878/"): {
        "files": ["gc-MTML-41878.json"],
        "output": [r"MTML mlse with orders \[\d, \d, \d, \d, \d, \d\]: relative RMS error per joint \(%\)",
                   r"written to gc-MTML-41878\.json"]},
    ("docs/identification.md", "dvrk-ident identify --arm mtm --data one_results.csv"): {
        "files": ["mtm.json", "pred.csv"],
        "output": [r"mtm sdp: solver optimal; training error per joint \(%\):( \d+\.\d){7}",
                   r"5999 predictions written to pred\.csv", r'"mass_kg": 0\.\d+']},
    ("docs/design.md", "ros2 param describe /trajectory_player_PSM1 speed_scale"): {
        "output": [r"Min value: 0\.0\s+Max value: 1\.0",
                   r"Setting parameter failed: Parameter speed_scale out of range Min: 0\.0, Max: 1\.0, value: 5\.0",
                   # Jazzy's rclpy names the types, Kilted's gives their numbers (3 double, 4 string)
                   r"Setting parameter failed: Wrong parameter type, "
                   r"expected '(Type\.DOUBLE|3)' got '(Type\.STRING|4)'",
                   r"Set parameter successful"]},
    ("docs/lab-procedure.md", "ros2 service call /identify dvrk_ident/srv/Identify"): {
        "files": ["identification/psm1/2025-06-02"],
        "output": [r"success=True", r"solver_status='optimal'",
                   r"result_file='[^']*identification/psm1/2025-06-02/PSM1-sdp-[^']+\.json'"]},
    ("launch/README.md", "ros2 launch dvrk_ident collect.launch.py arm:=PSM1 sim:=true\n"): {
        "check": _one_clock_complete_bag},
}

#: Data a block may name, staged in its scratch directory (name: path under ../shared).
STAGED = {
    "MTML-41878": "data/cuhk-mtm-gc/MTML-41878",
    "one_results.csv": "data/wpi-identification/mtm/one_results.csv",
    "psm_one_results.csv": "data/wpi-identification/psm/one_results.csv",
    "psm_no_weight.csv": "data/wpi-identification/psm/one_no_weight_results.csv",
    "psm_105_grams.csv": "data/wpi-identification/psm/one_105_grams_parallel_results.csv",
}


@dataclass(frozen=True)
class Block:
    document: str
    line: int
    code: str
    language: str = "bash"

    @property
    def id(self) -> str:
        return f"{self.document}:{self.line}"

    @property
    def first_line(self) -> str:
        return self.code.lstrip().splitlines()[0] if self.code.strip() else ""

    @property
    def not_run_reason(self) -> str | None:
        return self.first_line[len(NOT_RUN):].strip() if self.first_line.startswith(NOT_RUN) else None

    @property
    def run_by(self) -> str | None:
        """The test file that runs this block's commands (``# run by test/<file>.py``), if any."""
        return self.first_line[len("# run by "):].split()[0] if self.first_line.startswith(RUN_BY) else None

    @property
    def commands(self) -> list[str]:
        """The block's command lines, comments and continuation backslashes taken out."""
        joined = re.sub(r"\\\n\s*", " ", self.code)
        return [line.split(" # ")[0].strip() for line in joined.splitlines()
                if line.strip() and not line.lstrip().startswith("#")]

    @property
    def until_ctrl_c(self) -> bool:
        return self.first_line.startswith(UNTIL_CTRL_C)


def shell_blocks(path: Path, document: str) -> list[Block]:
    """The shell and python blocks of one Markdown file, as pytest-codeblocks extracts them."""
    blocks = []
    for b in pytest_codeblocks.extract_from_file(path):
        language = (b.syntax or "").split(" ")[0]
        if language in RUN:
            blocks.append(Block(document, b.lineno, b.code, "python" if language == "python" else "bash"))
    return blocks


BLOCKS = [b for d in DOCUMENTS if (REPO_ROOT / d).is_file() for b in shell_blocks(REPO_ROOT / d, d)]


def _session_groups(session: int) -> dict[int, list[int]]:
    """The process groups of ``session`` and their processes (from /proc)."""
    groups: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # ended meanwhile
        if int(fields[3]) == session:  # after the name: state, ppid, pgrp, session
            groups.setdefault(int(fields[2]), []).append(int(stat.parent.name))
    return groups


def ctrl_c(session: int) -> None:
    """Ctrl-C as a terminal sends it: to the job in the foreground. With job control on (set -m, as in a
    terminal) bash runs each job in a process group of its own; the shell's own group (the session's) gets it
    only when no job is left. (A signal to the shell alone would leave the job running, orphaned, holding the
    output pipe open; to every process at once, ros2 launch would get it twice: once more from the shell's
    EXIT trap.)"""
    groups = _session_groups(session)
    jobs = [group for group in groups if group != session] or [session]
    for group in jobs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGINT)


def kill_session(session: int) -> None:
    """SIGKILL to every process of the session (a block still running long after Ctrl-C)."""
    for pids in _session_groups(session).values():
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def logs_of(directory: Path) -> str:
    """The tails of the logs a block wrote (``> collect.log``): what its background commands said."""
    parts = []
    for log in sorted(directory.glob("*.log")):
        with contextlib.suppress(OSError):
            parts.append(f"--- {log.name} (last 40 lines) ---\n" + "\n".join(log.read_text().splitlines()[-40:]))
    return "\n".join(parts)


def run_block(block: Block, directory: Path, env: dict[str, str], setup_script: Path,
              timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    """The block as a user's shell runs it: set-up sourced, then its commands under ``set -e`` (a python
    block: in that shell's ``python``). A "runs until Ctrl-C" block gets SIGINT after :data:`RUNNING_FOR`
    seconds; its result's ``returncode`` is then 0 when it ended cleanly (status 0 or 130), -1 when it had
    ended before."""
    code = f"python - <<'DVRK_IDENT_DOCS_PYTHON'\n{block.code}\nDVRK_IDENT_DOCS_PYTHON" \
        if block.language == "python" else block.code
    # job control on, as in a user's terminal: a job started with & takes Ctrl-C (kill -INT %1); without it
    # bash starts background jobs with SIGINT ignored, and ros2 launch then cannot be stopped that way.
    # Whatever the block leaves running is stopped when it ends.
    script = (f"source {setup_script}\nset -m\ntrap 'kill -INT $(jobs -p) 2>/dev/null || true' EXIT\n"
              f"set -eo pipefail\n{code}")
    args = ["bash", "-c", script]
    if not block.until_ctrl_c:
        return subprocess.run(args, cwd=directory, env=env, capture_output=True, text=True, timeout=timeout)
    proc = subprocess.Popen(args, cwd=directory, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=RUNNING_FOR)
        return subprocess.CompletedProcess(args, -1, f"ended before Ctrl-C (status {proc.returncode}):\n{out}", "")
    except subprocess.TimeoutExpired:
        ctrl_c(proc.pid)
    try:
        out, _ = proc.communicate(timeout=STOP_WITHIN)
    except subprocess.TimeoutExpired:
        kill_session(proc.pid)
        out, _ = proc.communicate(timeout=STOP_WITHIN)
        return subprocess.CompletedProcess(args, -9, f"still running {STOP_WITHIN:g} s after Ctrl-C:\n{out}", "")
    clean = proc.returncode in (0, 130, -signal.SIGINT) and "Traceback" not in out
    return subprocess.CompletedProcess(args, 0 if clean else proc.returncode, out, "")


def stage(block: Block, directory: Path) -> None:
    """Link what the block names into the document's directory, as the reader has it: ../shared's data (a
    block that names it skips without it), the environment (``.venv``), the source tree's config/ (for
    ``--params-file config/...``)."""
    for name, relative in STAGED.items():
        if re.search(rf"(?<![\w./-]){re.escape(name)}", block.code) and not (directory / name).exists():
            if not SHARED.is_dir():
                pytest.skip(f"{SHARED} is absent: this block reads {name} (../shared/{relative})")
            (directory / name).symlink_to(SHARED / relative)
    if ".venv/" in block.code and not (directory / ".venv").exists():
        (directory / ".venv").symlink_to(Path(sys.prefix))
    if "--params-file config/" in block.code and not (directory / "config").exists():
        (directory / "config").symlink_to(REPO_ROOT / "config")
    if re.search(r"(^|[\s;&|(])ros2 ", block.code) and not (Path(sys.prefix) / "bin" / "ros2").exists():
        pytest.skip("the real ros2 tools are not built here (make setup builds them from ../shared/vendor/ros2-tools)")


def check_promises(block: Block, directory: Path, output: str) -> None:
    for (document, fragment), promise in PROMISES.items():
        if document == block.document and fragment in block.code:
            for name in promise.get("files", []):
                assert (directory / name).exists(), f"{block.id}: no {name} after the block\n{output}"
            for pattern in promise.get("output", []):
                assert re.search(pattern, output), f"{block.id}: output lacks /{pattern}/\n{output}"
            if "check" in promise:
                promise["check"](directory, output)


@pytest.fixture(scope="session")
def document_directories(tmp_path_factory) -> dict[str, Path]:
    """One working directory per document, shared by its blocks in order (for the session: a pytest-xdist
    worker may run other modules' tests between two blocks, and a module fixture would then start afresh)."""
    root = tmp_path_factory.mktemp("docs")
    return {d: root / d.replace("/", "_") for d in DOCUMENTS}


@pytest.fixture
def user_env(tmp_path) -> Iterator[dict[str, str]]:
    """A user's shell: HOME in the scratch area, its own ROS domain, discovery on this machine only."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DVRK_IDENT_TEST"))}
    env.pop("PYTHONPATH", None)
    env.update(HOME=str(tmp_path / "home"), ROS_DOMAIN_ID=str(next_domain_id()),
               ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", ROS_LOCALHOST_ONLY="1", PYTHONUNBUFFERED="1")
    (tmp_path / "home").mkdir()
    yield env
    ros2 = Path(sys.prefix) / "bin" / "ros2"
    if ros2.exists():  # `ros2 param` and `ros2 service` start a daemon for the domain: not left behind
        subprocess.run([str(ros2), "daemon", "stop"], env=env, capture_output=True, timeout=30)


def _setup_script() -> Path:
    script = Path(sys.prefix) / "setup.bash"
    if not script.is_file():
        pytest.skip(f"{script} is absent: not running from the `make setup` environment")
    return script


@pytest.mark.slow
# a document's blocks build on each other in one directory: one pytest-xdist worker runs them all, in order
# (tools/test.sh runs the node tests with --dist loadfile)
@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.id)
def test_documented_commands_run(block: Block, document_directories, user_env):
    reason = block.not_run_reason
    if reason is not None:
        pytest.skip(f"{block.id}: {reason}")
    if block.run_by is not None:
        runner = (REPO_ROOT / block.run_by).read_text()
        missing = [c for c in block.commands if c.split(" ", 1)[1] not in runner]
        assert missing == [], f"{block.id}: {block.run_by} does not run {missing}"
        pytest.skip(f"{block.id}: run by {block.run_by}")
    work = document_directories[block.document]
    work.mkdir(exist_ok=True)
    stage(block, work)
    proc = run_block(block, work, user_env, _setup_script())
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, \
        f"{block.id} exited {proc.returncode}:\n{block.code}\n--- output ---\n{output}\n{logs_of(work)}"
    check_promises(block, work, output)


def test_every_promise_names_a_block():
    for document, fragment in PROMISES:
        assert any(b.document == document and fragment in b.code and b.not_run_reason is None for b in BLOCKS), \
            f"{document}: no block run by the tests holds {fragment!r}"


_COMMAND = re.compile(r"^( {4,}|\t)(\$ )?(dvrk-ident|ros2|make|source|export|colcon|pip|python|cd) ")


@pytest.mark.parametrize("document", DOCUMENTS)
def test_no_command_hides_outside_a_shell_block(document: str):
    """An indented code block, or a fenced block of another language, is not run: commands belong in a
    ``bash`` block (run, or marked with its reason)."""
    inside_fence, fence_language, problems = False, "", []
    for number, line in enumerate((REPO_ROOT / document).read_text().splitlines(), 1):
        stripped = line.lstrip()
        if stripped.startswith("```"):
            inside_fence = not inside_fence
            fence_language = stripped[3:].strip().split(" ")[0] if inside_fence else ""
            continue
        if (not inside_fence and _COMMAND.match(line)) or \
                (inside_fence and fence_language not in SHELL and re.match(r"\s*(\$ )?(dvrk-ident|ros2|make) ", line)):
            problems.append(f"{document}:{number}: {line.strip()}")
    assert problems == []


def test_an_unmarked_failing_block_fails_and_a_marked_one_skips(tmp_path, user_env):
    """The contract can fail: a block whose command fails fails its test; a marked one is skipped, with the
    reason the reader sees."""
    doc = tmp_path / "doc.md"
    doc.write_text("Text.\n\n```bash\ndvrk-ident --version\nfalse\necho never\n```\n\n"
                   f"```bash\n{NOT_RUN} needs a real dVRK arm\nros2 launch dvrk_ident collect.launch.py\n```\n")
    failing, marked = shell_blocks(doc, "doc.md")
    assert (failing.not_run_reason, marked.not_run_reason) == (None, "needs a real dVRK arm")
    proc = run_block(failing, tmp_path, user_env, _setup_script(), timeout=60)
    assert proc.returncode != 0 and "never" not in proc.stdout, proc.stdout + proc.stderr
    assert "dvrk-ident" in proc.stdout  # the first command ran: the block's shell is the user's
