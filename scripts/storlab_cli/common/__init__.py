"""Small helpers every part shares: argument parsing, CSV writing, text tables, safe file reading."""
