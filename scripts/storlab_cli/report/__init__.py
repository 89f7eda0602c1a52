"""Figures (gnuplot) and the HTML report of a results directory, and the report's check in a headless browser."""
