"""What one point's raw files hold, as the backend that wrote them reads
them back (each backend's read_point): the merged fio figures, the device
windows, the timeline and the events, and whether the host was the limit."""
from dataclasses import dataclass


@dataclass
class RawPoint:
    sources: list         # the raw fio files the figures come from (none: no result)
    summary: dict         # results.fio_merge's merged summary
    windows: list         # results.device_window.DeviceWindow of every device
    host_limit: str | None   # results.host_limit codes; None: a backend without a host path
    samples: list         # results.timeline samples ([] without a timeline)
    events: list          # [(t_s, command)] sent during the point
    extra: dict = None    # other points.csv columns (the cluster model's layers)
    nodes: int | None = None   # the nodes whose fio ran (as units counts their units)
