import os


rule train:
    input:
        unpack(lambda w: dag.train_inputs(config, w.run, w.k)),
        triplets_path="results/data/train/triplets.jsonl",
    output:
        model_dir=directory("results/runs/{run}/k{k}/model"),
        log_path="results/runs/{run}/k{k}/train_log.jsonl",
        prov_path="results/runs/{run}/k{k}/train_provenance.json",
        status_path="results/runs/{run}/k{k}/status.json",
    wildcard_constraints:
        run=dag.trained_run_regex(config),
    params:
        stage="train",
        kwargs=lambda w: dag.train_kwargs(dag.results_config(config), w.run, w.k),
        # A function of `output`, so a derived param: outside the params rerun trigger. Checkpoints
        # live beside the outputs but are not outputs (Snakemake deletes the outputs of a failed job;
        # a restarted job must find them to resume); changing checkpoint_steps re-runs nothing, and
        # neither does the config file's name (only used to name it in error messages).
        runtime=lambda w, output: {
            "checkpoint_dir": os.path.join(os.path.dirname(output.log_path), "checkpoints"),
            "checkpoint_steps": config["recipe"]["checkpoint_steps"],
            "processes": config["train_processes"],
            "config_file": CONFIG_FILE,
            "mirror": config["mirror"],
            "cache_dir": config["cache_dir"],
        },
    # All cores of the run (--cores N; inside a cluster job, the cores it sees). Submitting to a
    # cluster defines no cores (workflow.cores raises): 1, the job's CPUs are the profile's resources.
    threads: workflow.resource_settings.cores or 1
    resources:
        gpu=1 if config["use_gpu"] else 0,
    log:
        "results/logs/train/{run}_k{k}.log",
    script:
        "../scripts/stage.py"


# A backbone with `evaluate_only: true` (a released, already trained sparse encoder): the same
# outputs as train, made from the checkpoint as released (no training, no triplets, k = 1), so
# index, evaluate and every report treat it like a trained run.
rule released:
    input:
        norms_json="results/norms/{run}.json",
    output:
        model_dir=directory("results/runs/{run}/k{k}/model"),
        log_path="results/runs/{run}/k{k}/train_log.jsonl",
        prov_path="results/runs/{run}/k{k}/train_provenance.json",
        status_path="results/runs/{run}/k{k}/status.json",
    wildcard_constraints:
        run=dag.dataset_regex(dag.released_runs(config)),
        k="1",
    params:
        stage="released",
        kwargs=lambda w: dag.released_kwargs(dag.results_config(config), w.run),
        runtime=lambda w, output: {"config_file": CONFIG_FILE, "mirror": config["mirror"],
                                   "cache_dir": config["cache_dir"]},
    log:
        "results/logs/train/{run}_k{k}.log",
    script:
        "../scripts/stage.py"
