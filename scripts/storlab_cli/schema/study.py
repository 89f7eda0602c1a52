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
    deviation = "..."                optional: where it differs from the study
                                     (a thing the lab or the model lacks)
"""
from dataclasses import dataclass

STUDY_KEYS = ("scenario", "figure", "sim_wall_s", "lab_scale", "deviation")
SCENARIO_RANGE = (1, 6)
WALL_RANGE_S = (1, 86400)


@dataclass
class Study:
    scenario: int
    figure: str
    sim_wall_s: int | None
    lab_scale: float | None = None
    deviation: str = ""


def read(loader, table, scale_range):
    """The [study] table checked by loader (schema/loader.py)."""
    loader.check_keys(table, STUDY_KEYS, "study")
    for key in ("scenario", "figure"):
        if key not in table:
            loader.fail(f"study.{key}", "missing (a study says what it reproduces)")
    wall_s = table.get("sim_wall_s")
    if wall_s is not None:
        wall_s = loader.integer(wall_s, "study.sim_wall_s", WALL_RANGE_S)
    lab_scale = table.get("lab_scale")
    if lab_scale is not None:
        lab_scale = loader.number(lab_scale, "study.lab_scale", *scale_range)
    return Study(loader.integer(table["scenario"], "study.scenario", SCENARIO_RANGE),
                 loader.string(table["figure"], "study.figure"),
                 wall_s,
                 lab_scale, loader.string(table.get("deviation", ""), "study.deviation"))
