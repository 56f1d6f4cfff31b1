"""The job runtime: what runs inside a Snakemake job. The job runner, from a rule's ``script:`` to
its job function (:mod:`~lsrbench.pipeline.job_runner`; a stage's job lives with its declaration in
:mod:`lsrbench.stages`, a report's with its declaration in :mod:`lsrbench.report.reports`), and each job's own
GPUs (:mod:`~lsrbench.pipeline.gpus`). What a job computes and where its outputs go is decided before, by the DAG (:mod:`lsrbench.dag`)."""
