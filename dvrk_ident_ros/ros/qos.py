"""The QoS profiles of the package's topics, both ends: the arm's state and commands, events, statuses."""
from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

#: State and command topics: reliable, deep enough that a 1 kHz stream survives a slow callback.
STATE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.RELIABLE)
#: A control loop's state subscription: best effort (a late sample is worth less than the next one, and no
#: retransmission delays it); matches the dVRK's reliable publishers. Not for the recorder: it loses nothing.
CONTROL_STATE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.BEST_EFFORT)

#: The player's status (/dvrk_ident/<ARM>/player_status), both ends: its phase changes cut the recorder's sampling
#: windows, so none may be lost. Reliable, and deep enough (10 s at the status's 50 Hz) that a recorder stalled for
#: seconds still gets every one: a shallow queue loses a pose's SAMPLING status under load, and the pose goes
#: uncounted (docs/results.md, "Recording").
STATUS_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=500, reliability=ReliabilityPolicy.RELIABLE)
#: The dVRK's event topics (operating_state, goal_reached): a late subscriber gets the last message.
EVENT_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.TRANSIENT_LOCAL)
