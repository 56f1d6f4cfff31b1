# The step-0 probe of each backbone (lsrbench.stages.probe; docs/probe.md): its
# checkpoint loaded once, every (mode, k) it is swept at (plus k = 1 and probe.k_grid) measured
# before any optimiser step. Upstream only of k: probe and of k: auto by a logit-scale statistic;
# `lsrbench probe` runs it (and its report, results/probe.md) alone.
rule probe:
    input:
        unpack(S.inputs("probe")),
    output:
        **S.outputs("probe"),
    wildcard_constraints:
        **S.constraints("probe"),
    params:
        **S.params("probe"),
    # One thread locally, jobs side by side; inside a cluster job the cores it was given.
    threads: JOB_THREADS
    resources:
        gpu=GPUS,
    log:
        S.log("probe"),
    priority: S.priority("probe")
    script:
        "../scripts/stage.py"
