"""The safety net of the gravity compensation: what the node leaves for it, and how it learns the node died
(ROS-free; the node ``gc_safety_net`` publishes what :func:`hand_back` says).

The dVRK keeps applying the last ``servo_jf`` for ever: neither the console (sawIntuitiveResearchKit's arm)
nor its ROS bridge (cisst-ros) has a watchdog on it. A compensation node that ends without its own
hand-over (a crash, SIGKILL, the OOM killer) would leave the arm held by the torque of a pose it may have
left, with the dVRK's own compensation off. So:

- the node writes its state to :func:`state_path` whenever it takes the arm or gives it back: its pid,
  whether it owns the arm (it commands ``servo_jf``) and the value of ``use_gravity_compensation`` to put
  back (as found before its first take-over; None where the node does not manage the flag);
- the net, started beside it by both launchers, watches that pid (a pidfd: woken the moment the process
  ends, no polling) and, when it ends while the file still says it owns the arm, sends ``hold`` (the arm's own
  PID holds it where it is) and the flag as found: :func:`hand_back`.

A clean exit gives the arm back itself and writes ``owned: false`` first: the net then does nothing; a net
that handed back writes the same. A state a net finds when it starts, of a process that had already ended, is
a leftover (a node that died while no net watched it): the net reports it and does not act on it, since the arm
may be in someone's hands by now.
"""
from __future__ import annotations

import json
import os
import select
from dataclasses import asdict, dataclass
from pathlib import Path

from dvrk_ident_ros.errors import DataError


@dataclass(frozen=True)
class NetState:
    """What the compensation node tells the net."""

    arm: str
    pid: int
    owned: bool  # the node has taken the arm (commands servo_jf; the dVRK's own compensation off)
    restore_flag: bool | None  # use_gravity_compensation to publish when handing back; None: leave it


@dataclass(frozen=True)
class HandBack:
    """What the net publishes: ``hold`` and, unless None, ``use_gravity_compensation``."""

    hold: bool
    flag: bool | None


def state_path(arm: str, domain: str | None = None) -> Path:
    """The state file of ``arm``'s compensation in this ROS domain: $ROS_HOME (else ~/.ros)/dvrk_ident/."""
    home = Path(os.environ.get("ROS_HOME") or Path.home() / ".ros")
    domain = os.environ.get("ROS_DOMAIN_ID", "0") if domain is None else domain
    return home / "dvrk_ident" / f"gc_safety_net_{arm}_domain{domain or '0'}.json"


def write_state(path: Path, state: NetState) -> None:
    """Atomically (a reader sees the old file or the new one, never a part)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(asdict(state)), encoding="utf-8")
    os.replace(tmp, path)


def read_state(path: Path) -> NetState | None:
    """The state in ``path``; None when there is none. A file that is not a state is a DataError."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not a safety-net state ({exc})") from exc
    try:
        flag = raw["restore_flag"]
        return NetState(str(raw["arm"]), int(raw["pid"]), bool(raw["owned"]), None if flag is None else bool(flag))
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"{path}: not a safety-net state ({exc})") from exc


def written_at(path: Path) -> float | None:
    """When the state in ``path`` was last written (epoch s); None when there is none."""
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def hand_back(state: NetState | None) -> HandBack | None:
    """What to publish once the node of ``state`` has ended: nothing unless it still owned the arm."""
    if state is None or not state.owned:
        return None
    return HandBack(hold=True, flag=state.restore_flag)


class ProcessWatch:
    """The end of one process, without polling: a pidfd (Linux 5.3, Python 3.9) that turns readable when the
    process ends. A pid that no longer exists has ended already."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._fd: int | None = None
        self.ended = False
        try:
            self._fd = os.pidfd_open(pid)
        except ProcessLookupError:
            self.ended = True

    def wait(self, timeout: float) -> bool:
        """True once the process has ended (waits up to ``timeout`` s for it)."""
        if not self.ended and self._fd is not None:
            ready, _, _ = select.select([self._fd], [], [], timeout)
            self.ended = bool(ready)
        return self.ended

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
