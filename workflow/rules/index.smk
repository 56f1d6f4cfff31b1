# Documents and queries of every evaluated dataset that has its own corpus; a dataset sharing
# another's corpus (MS MARCO Dev and TREC DL 2019 with full collections) gets only its queries
# encoded, by index_queries below, and is scored against the other's docs.npz (L.docs_npz).
rule index:
    input:
        unpack(lambda w: dag.index_inputs(L, w)),
    output:
        docs_out=pattern("index", "docs.npz"),
        queries_out=pattern("index", "queries.npz"),
        params_json=pattern("index", "params.json"),
    wildcard_constraints:
        dataset=dag.dataset_regex(d for d in DATASETS if d not in dag.corpus_sharing_datasets(config)),
        train_id=L.id_regex("train"),
        index_id=L.id_regex("index"),
    params:
        stage="index",
        identity=lambda w: dag.identity(L, "index", w),
        kwargs=lambda w: dag.index_kwargs(L, w),
        # A function of `output`, so a derived param: outside the params rerun trigger. The shards
        # live beside the outputs but are not outputs (Snakemake deletes the outputs of a failed
        # job; a restarted job must find them to resume), and docs.npz does not depend on the
        # shard size, so changing encode_shard_size re-runs nothing.
        runtime=lambda w, output: dag.index_runtime(L, output),
    # One thread locally, jobs side by side; inside a cluster job the cores it was given (params.job_threads).
    threads: JOB_THREADS
    # One GPU per index job, its own (lsrbench.pipeline.gpus), with `use_gpu: true`.
    resources:
        gpu=1 if config["use_gpu"] else 0,
    log:
        pattern("index", "index.log"),
    script:
        "../scripts/stage.py"


rule index_queries:
    input:
        unpack(lambda w: dag.index_inputs(L, w)),
    output:
        queries_out=pattern("index", "queries.npz"),
        params_json=pattern("index", "params.json"),
    wildcard_constraints:
        dataset=dag.dataset_regex(dag.corpus_sharing_datasets(config)),
        train_id=L.id_regex("train"),
        index_id=L.id_regex("index"),
    params:
        stage="index",
        identity=lambda w: dag.identity(L, "index", w),
        kwargs=lambda w: dag.index_kwargs(L, w),
    threads: JOB_THREADS
    resources:
        gpu=1 if config["use_gpu"] else 0,
    log:
        pattern("index", "index_queries.log"),
    script:
        "../scripts/stage.py"
