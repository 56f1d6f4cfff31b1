# Every rule runs one lsrbench stage function; this file only hands over the snakemake object.
from lsrbench.pipeline.bridge import run

run(snakemake)  # noqa: F821 (injected by Snakemake)
