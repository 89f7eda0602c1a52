"""How a point runs: on a lab (fio in the guests) or in the simulator (storlab-sim)."""
