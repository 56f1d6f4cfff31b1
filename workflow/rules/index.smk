# Documents and queries of every evaluated dataset that has its own corpus; a dataset sharing
# another's corpus (MS MARCO Dev and TREC DL 2019 with full collections) gets only its queries
# encoded, by index_queries below, and is scored against the other's docs.npz.
rule index:
    input:
        unpack(S.inputs("index")),
    output:
        **S.outputs("index"),
    wildcard_constraints:
        **S.constraints("index"),
    params:
        **S.params("index"),
    # One thread locally, jobs side by side; inside a cluster job the cores it was given.
    threads: JOB_THREADS
    # One GPU per index job, its own (lsrbench.pipeline.gpus), with `use_gpu: true`.
    resources:
        gpu=GPUS,
    log:
        S.log("index"),
    priority: S.priority("index")
    script:
        "../scripts/stage.py"


rule index_queries:
    input:
        unpack(S.inputs("index_queries")),
    output:
        **S.outputs("index_queries"),
    wildcard_constraints:
        **S.constraints("index_queries"),
    params:
        **S.params("index_queries"),
    threads: JOB_THREADS
    resources:
        gpu=GPUS,
    log:
        S.log("index_queries"),
    priority: S.priority("index_queries")
    script:
        "../scripts/stage.py"
