"""The job runtime: what runs inside a Snakemake job."""
