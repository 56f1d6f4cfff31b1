"""The config layer, at the bottom of the package: strict YAML, schemas and defaults, layered files, the run grid,
dataset entries and the paper's reported numbers."""
