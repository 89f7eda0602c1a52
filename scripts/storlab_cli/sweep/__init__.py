"""Sweeps: the plan of a sweep on a topology, fio job files, and one backend per way of running a point (lab, simulator)."""
