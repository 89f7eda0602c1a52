"""A sweep's results: the directory layout, fio's JSON merged across units, device windows, timelines, points.csv, when the host was the limit."""
