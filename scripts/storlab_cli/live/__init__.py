"""Live views and control of running devices: storlab top, storlab ctl, the raid event log, stats snapshots."""
