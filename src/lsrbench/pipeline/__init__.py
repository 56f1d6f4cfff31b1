"""The pipeline: config loading and validation (:mod:`~lsrbench.pipeline.config`, schemas in
``schemas/``), rule parameters (:mod:`~lsrbench.pipeline.params`), one function per rule
(:mod:`~lsrbench.pipeline.stages`, :mod:`~lsrbench.pipeline.report_stages`), the Snakemake bridge
(:mod:`~lsrbench.pipeline.bridge`), data-parallel training (:mod:`~lsrbench.pipeline.distributed`)
and the offline mirror (:mod:`~lsrbench.pipeline.prefetch`)."""
