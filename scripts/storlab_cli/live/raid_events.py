"""A raid plugin's control event log and the controller state it tells.

The plugin writes `<stats>.events`, one JSON object a line:
    {"time_ns": engine time, "monotonic_ns": ..., "realtime_ns": wall clock,
     "event": "battery set failed"}
The first events name the array ("array: raid 10, 8 members, stripe 64 KiB,
cache 512 MiB") and its start ("start: policy write-back, battery ok");
later ones every change (battery, policy, members, power cuts).

load(path) -> [Event]; controller(events) -> Controller (layout, policy and
member states replayed from the log). The battery's present state is the
stats file's battery_state counter: battery_name() names it.
"""
import json
import re
from dataclasses import dataclass, field

from storlab_cli.common import regular_file
from storlab_cli.errors import UserError

# The plugin writes a line per control change: a few KiB in a long run.
MAX_LOG_BYTES = 64 << 20
BATTERY_STATES = ("ok", "learning", "failed", "absent")     # battery_state counter values
UNIT_BYTES = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}

ARRAY = re.compile(r"array: raid (\d+), (\d+) members, stripe (\d+) (\w+), cache (\d+) (\w+)$")
START_POLICY = re.compile(r"start: policy ([\w-]+),")
POLICY_SET = re.compile(r"cache policy set ([\w-]+)$")
MEMBER = re.compile(r"member (\d+) (failed|replaced, rebuilding|rebuilt)$")
MEMBER_STATE = {"failed": "failed", "replaced, rebuilding": "rebuilding", "rebuilt": "ok"}


@dataclass(frozen=True)
class Event:
    time_ns: int                    # engine time (since the device started)
    realtime_ns: int | None         # wall clock, when logged
    text: str


@dataclass
class Controller:
    level: int | None = None
    members: int | None = None
    stripe_bytes: int | None = None
    cache_bytes: int | None = None
    policy: str | None = None
    member_states: dict = field(default_factory=dict)   # member index -> "failed"/"rebuilding"/"ok"

    def member_state(self, index):
        return self.member_states.get(index, "ok")


def events_path(stats_path):
    return stats_path + ".events"


def load(path, host=None):
    """The events logged so far; [] when there is no log (not a raid
    device, or the plugin runs without ctl=). A last line still being
    written is left for the next read. host: the LabHost the log is on."""
    if host is not None and not host.local:
        text = host.read_text(path, MAX_LOG_BYTES)
        if text is None:
            return []
        return _parse(text, path)
    try:
        text = regular_file.read_bytes(path, MAX_LOG_BYTES).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return []
    return _parse(text, path)


def _parse(text, path):
    events = []
    for number, line in enumerate(text.split("\n")[:-1], 1):
        try:
            doc = json.loads(line)
            events.append(Event(time_ns=int(doc["time_ns"]), realtime_ns=doc.get("realtime_ns"),
                                text=str(doc["event"])))
        except (ValueError, KeyError, TypeError):
            raise UserError(f"{path}:{number}: not an event line ({line[:60]!r})") from None
    return events


def _bytes(number, unit):
    return int(number) * UNIT_BYTES.get(unit, 0) or None


def controller(events):
    """The controller's layout, cache policy and member states, replayed."""
    c = Controller()
    for ev in events:
        if m := ARRAY.match(ev.text):
            c.level, c.members = int(m[1]), int(m[2])
            c.stripe_bytes, c.cache_bytes = _bytes(m[3], m[4]), _bytes(m[5], m[6])
        elif m := START_POLICY.match(ev.text) or POLICY_SET.match(ev.text):
            c.policy = m[1]
        elif m := MEMBER.match(ev.text):
            c.member_states[int(m[1])] = MEMBER_STATE[m[2]]
    return c


def battery_name(counter_value):
    if 0 <= counter_value < len(BATTERY_STATES):
        return BATTERY_STATES[counter_value]
    return f"state {counter_value}"
