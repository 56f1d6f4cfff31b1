import os


# Documents and queries of every evaluated dataset that has its own corpus; a dataset sharing
# another's corpus (MS MARCO Dev and TREC DL 2019 with full collections) gets only its queries
# encoded, by index_queries below, and is scored against the other's docs.npz (dag.docs_npz).
rule index:
    input:
        model_dir="results/runs/{run}/k{k}/model",
        data_dir="results/data/{dataset}/eval",
    output:
        docs_out="results/runs/{run}/k{k}/{dataset}/docs.npz",
        queries_out="results/runs/{run}/k{k}/{dataset}/queries.npz",
    wildcard_constraints:
        dataset=dag.dataset_regex(d for d in DATASETS if d not in dag.corpus_sharing_datasets(config)),
    params:
        stage="index",
        kwargs=lambda w: dag.index_kwargs(config, w.dataset),
        # A function of `output`, so a derived param: outside the params rerun trigger. The shards
        # live beside the outputs but are not outputs (Snakemake deletes the outputs of a failed
        # job; a restarted job must find them to resume), and docs.npz does not depend on the
        # shard size, so changing encode_shard_size re-runs nothing.
        runtime=lambda w, output: {
            "shard_dir": os.path.join(os.path.dirname(output.docs_out), "doc_shards"),
            "shard_size": config["evaluation"]["encode_shard_size"] or 0,
        },
    # All cores of the run (--cores N; inside a cluster job, the cores it sees). Submitting to a
    # cluster defines no cores (workflow.cores raises): 1, the job's CPUs are the profile's resources.
    threads: workflow.resource_settings.cores or 1
    # One GPU per index job, its own (lsrbench.pipeline.gpus), with `use_gpu: true`.
    resources:
        gpu=1 if config["use_gpu"] else 0,
    log:
        "results/logs/index/{run}_k{k}_{dataset}.log",
    script:
        "../scripts/stage.py"


rule index_queries:
    input:
        model_dir="results/runs/{run}/k{k}/model",
        data_dir="results/data/{dataset}/eval",
    output:
        queries_out="results/runs/{run}/k{k}/{dataset}/queries.npz",
    wildcard_constraints:
        dataset=dag.dataset_regex(dag.corpus_sharing_datasets(config)),
    params:
        stage="index",
        kwargs=lambda w: dag.index_kwargs(config, w.dataset),
    threads: workflow.resource_settings.cores or 1
    resources:
        gpu=1 if config["use_gpu"] else 0,
    log:
        "results/logs/index/{run}_k{k}_{dataset}_queries.log",
    script:
        "../scripts/stage.py"
