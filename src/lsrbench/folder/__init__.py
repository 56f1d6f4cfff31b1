"""A results folder's integrity: each finished job's record (records), the checks made before the
DAG is built (state: stale, refused, another config's reports; freshness: damaged inputs)."""
