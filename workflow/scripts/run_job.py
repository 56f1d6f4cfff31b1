# Every rule runs one lsrbench job function; this file only hands over the snakemake object.
from lsrbench.pipeline.job_runner import run

run(snakemake)  # noqa: F821 (injected by Snakemake)
