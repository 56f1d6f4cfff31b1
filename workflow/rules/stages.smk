# One rule per addressed stage, each made from its declaration alone (lsrbench.stages: what decides
# its folder id, its inputs, outputs, runtime settings, priority; S: lsrbench.dag.stage.StageRules),
# and run by its job function through the one job runner script. A job that runs a model (train,
# index, the probe, the MLM re-fit) runs one thread locally, jobs side by side, and inside a cluster
# job the cores it was given (JOB_THREADS); one GPU each with `use_gpu: true` (lsrbench.pipeline.gpus).
for stage_name in S.names():

    rule:
        name:
            stage_name
        localrule: S.local(stage_name)
        input:
            unpack(S.inputs(stage_name)),
        output:
            **S.outputs(stage_name),
        wildcard_constraints:
            **S.constraints(stage_name),
        params:
            **S.params(stage_name),
        threads: S.threads(stage_name, JOB_THREADS)
        resources:
            **S.resources(stage_name, GPUS),
        log:
            **S.log(stage_name),
        priority: S.priority(stage_name)
        script:
            "../scripts/run_job.py"
