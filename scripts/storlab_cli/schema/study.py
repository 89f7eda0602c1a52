"""A sweep file's [study] table: what a shipped study (topologies/studies/)
reproduces, for `storlab studies` and the README.

    [study]
    scenario = 2                     the seed scenario it reproduces, 1..6
                                     (/work/shared/reference/seed-scenarios.md)
    figure = "IOPS per node vs cluster size"   the published figure family
    sim_wall_s = 380                 optional: its wall time in the simulator
                                     at full scale, measured on a 2-core host
                                     by scripts/bench/studies_walltime.py
                                     (left out: not measured yet)
    lab_scale = 1000                 optional: the --scale a lab run takes
    lab_wall_s = 900                 optional: its wall time in a lab at
                                     lab_scale (TCG guests, a 2-core host),
                                     lab up and down included (left out: not
                                     measured yet)
    deviation = "..."                optional: where it differs from the study
                                     (a thing the lab or the model lacks)
"""
from dataclasses import dataclass

STUDY_KEYS = ("scenario", "figure", "sim_wall_s", "lab_scale", "lab_wall_s", "deviation")
SCENARIO_RANGE = (1, 6)
WALL_RANGE_S = (1, 86400)


@dataclass
class Study:
    scenario: int
    figure: str
    sim_wall_s: int | None
    lab_scale: float | None = None
    deviation: str = ""
    lab_wall_s: int | None = None


def read(loader, table, scale_range):
    """The [study] table checked by loader (schema/loader.py)."""
    loader.check_keys(table, STUDY_KEYS, "study")
    for key in ("scenario", "figure"):
        if key not in table:
            loader.fail(f"study.{key}", "missing (a study says what it reproduces)")
    wall_s, lab_wall_s = (None if table.get(key) is None else
                          loader.integer(table[key], f"study.{key}", WALL_RANGE_S)
                          for key in ("sim_wall_s", "lab_wall_s"))
    lab_scale = table.get("lab_scale")
    if lab_scale is not None:
        lab_scale = loader.number(lab_scale, "study.lab_scale", *scale_range)
    if lab_wall_s is not None and lab_scale is None:
        loader.fail("study.lab_wall_s", "a lab's wall time needs the lab_scale it ran at")
    return Study(loader.integer(table["scenario"], "study.scenario", SCENARIO_RANGE),
                 loader.string(table["figure"], "study.figure"),
                 wall_s,
                 lab_scale, loader.string(table.get("deviation", ""), "study.deviation"),
                 lab_wall_s)
