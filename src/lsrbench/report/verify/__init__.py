"""Checks of a finished results folder: ``lsrbench verify`` (manifests, metrics.csv, table1.md, the
other reports, one config, library versions), ``lsrbench expected`` (values against their
tolerances), the one-command-per-cell page and the reproduction-log entry."""
