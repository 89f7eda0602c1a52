"""The file formats users write: topologies (with their storage profile) and sweeps, checked to one-line errors; a plugin's keys from the plugin itself."""
