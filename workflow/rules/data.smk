# Data rules. Every output lives in a content-addressed folder (lsrbench.pipeline.paths): a
# dataset by what its source holds (a local folder's bytes, else the source's own name), never by
# where it is read from (mirror, cache folder), which go in the runtime params (functions of
# `output`, outside Snakemake's params rerun trigger).


rule dataset:
    output:
        full_dir=directory(pattern("data", "full")),
        info=pattern("data", "info.json"),
        params_json=pattern("data", "params.json"),
    wildcard_constraints:
        data_id=L.id_regex("data"),
    params:
        stage="dataset",
        identity=lambda w: dag.identity(L, "data", w),
        kwargs=lambda w: dag.dataset_kwargs(L, w),
        runtime=lambda w, output: dag.dataset_runtime(L, w, CONFIG_FILE),
    log:
        pattern("data", "dataset.log"),
    script:
        "../scripts/stage.py"


# The evaluated subset of a dataset with evaluation.pool_depth (without it the full folder is
# evaluated): its own rule, so a new pool depth never re-writes the full folder that the
# training triplets are cropped from.
rule pool:
    input:
        unpack(lambda w: dag.pool_inputs(L, w)),
    output:
        eval_dir=directory(pattern("pool", "eval")),
        eval_info=pattern("pool", "eval.json"),
        params_json=pattern("pool", "params.json"),
    wildcard_constraints:
        data_id=L.id_regex("data"),
    params:
        stage="pool",
        identity=lambda w: dag.identity(L, "pool", w),
        kwargs=lambda w: dag.pool_kwargs(L, w),
        runtime=lambda w, output: {"corpus_store": L.corpus_store()},
    log:
        pattern("pool", "pool.log"),
    script:
        "../scripts/stage.py"


rule triplets:
    input:
        unpack(lambda w: dag.triplets_inputs(L)),
    output:
        out=pattern("triplets", "triplets.jsonl"),
        params_json=pattern("triplets", "params.json"),
    wildcard_constraints:
        triplets_id=L.id_regex("triplets"),
    params:
        stage="triplets",
        identity=lambda w: dag.identity(L, "triplets", w),
        kwargs=lambda w: dag.triplets_kwargs(L),
        # Where the triplets are read from, not what they are (a mirror holds the same triplets,
        # checked against training_data).
        runtime=lambda w, output: dag.triplets_runtime(L, CONFIG_FILE),
    log:
        pattern("triplets", "triplets.log"),
    script:
        "../scripts/stage.py"


# `snakemake --cores 1 prefetch --config mirror=DIR [--configfile FILE]` on a connected node:
# every model and dataset of the config into DIR (lsrbench prefetch); compute nodes then run with
# `--config mirror=DIR` and HF_HUB_OFFLINE=1. No outputs: it always runs, and on the submitting
# node (localrule), never as a cluster job.
rule prefetch:
    localrule: True
    log:
        "results/logs/prefetch.log",
    run:
        from lsrbench.pipeline.prefetch import prefetch_or_exit

        prefetch_or_exit(config, CONFIG_FILE, config["mirror"], log[0])
