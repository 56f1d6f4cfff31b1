"""The job runtime: what runs inside a Snakemake job. The one bridge from a rule's ``script:``
(:mod:`~lsrbench.pipeline.bridge`), the job function of every stage (:mod:`~lsrbench.pipeline.stages`, :mod:`~lsrbench.pipeline.refit_job`,
:mod:`~lsrbench.pipeline.report_stages`), registered below under its rule's name, each job's own
GPUs (:mod:`~lsrbench.pipeline.gpus`) and data-parallel training (:mod:`~lsrbench.pipeline.distributed`).
What a job computes and where its outputs go is decided before, by the DAG (:mod:`lsrbench.dag`)."""

from lsrbench.pipeline import refit_job, report_stages, stages

__all__ = ["JOBS"]

# rule or stage name -> its job function (lsrbench.dag.stage.StageRules.check binds each at parse time)
JOBS = {
    "mlm_refit": refit_job.mlm_refit, "norm": stages.norm, "dataset": stages.dataset, "pool": stages.pool, "triplets": stages.triplets,
    "train": stages.train, "released": stages.released, "index": stages.index, "index_queries": stages.index,
    "evaluate": stages.evaluate, "pooled_flops": stages.pooled_flops, "bm25": stages.bm25,
    "config_snapshot": stages.config_snapshot, "probe": stages.probe,
    "report_collect": report_stages.report_collect, "report_chance": report_stages.report_chance,
    "report_table1": report_stages.report_table1,
    "report_table_beir": report_stages.report_table_beir, "report_norms": report_stages.report_norms,
    "report_tradeoff": report_stages.report_tradeoff, "report_loss_curves": report_stages.report_loss_curves,
    "report_claims": report_stages.report_claims, "report_html": report_stages.report_html,
    "report_probe": report_stages.report_probe, "report_probe_outcomes": report_stages.report_probe_outcomes,
}
