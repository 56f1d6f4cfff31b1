rule train:
    input:
        unpack(lambda w: dag.train_inputs(L, w)),
    output:
        model_dir=directory(pattern("train", "model")),
        log_path=pattern("train", "train_log.jsonl"),
        prov_path=pattern("train", "train_provenance.json"),
        status_path=pattern("train", "status.json"),
        params_json=pattern("train", "params.json"),
    wildcard_constraints:
        train_id=L.id_regex("train", released=False),
    params:
        stage="train",
        identity=lambda w: dag.identity(L, "train", w),
        kwargs=lambda w: dag.train_kwargs(L, w),
        # A function of `output`, so a derived param: outside the params rerun trigger. Checkpoints
        # live beside the outputs but are not outputs (Snakemake deletes the outputs of a failed job;
        # a restarted job must find them to resume); changing checkpoint_steps re-runs nothing, and
        # neither does the config file's name (only used to name it in error messages).
        runtime=lambda w, output: dag.train_runtime(L, w, output, CONFIG_FILE),
    # One thread locally, jobs side by side; inside a cluster job the cores it was given (params.job_threads).
    threads: JOB_THREADS
    resources:
        gpu=1 if config["use_gpu"] else 0,
    log:
        pattern("train", "train.log"),
    script:
        "../scripts/stage.py"


# A backbone with `evaluate_only: true` (a released, already trained sparse encoder): the same
# outputs as train, made from the checkpoint as released (no training, no triplets, k = 1), so
# index, evaluate and every report treat it like a trained run.
rule released:
    input:
        unpack(lambda w: dag.released_inputs(L, w)),
    output:
        model_dir=directory(pattern("train", "model")),
        log_path=pattern("train", "train_log.jsonl"),
        prov_path=pattern("train", "train_provenance.json"),
        status_path=pattern("train", "status.json"),
        params_json=pattern("train", "params.json"),
    wildcard_constraints:
        train_id=L.id_regex("train", released=True),
        k="1",
    params:
        stage="released",
        identity=lambda w: dag.identity(L, "train", w),
        kwargs=lambda w: dag.released_kwargs(L, w),
        runtime=lambda w, output: dag.released_runtime(L, w, CONFIG_FILE),
    log:
        pattern("train", "train.log"),
    script:
        "../scripts/stage.py"
