import os


def results_config(config):
    """The config as it determines results: ``recipe.checkpoint_steps`` only says how often training
    saves a resumable checkpoint and ``evaluation.encode_shard_size`` how the index stage cuts its
    work (the same docs.npz either way), so they are left out of the params (and their rerun trigger)."""
    recipe = {key: value for key, value in config["recipe"].items() if key != "checkpoint_steps"}
    evaluation = {key: value for key, value in config["evaluation"].items() if key != "encode_shard_size"}
    return {**config, "recipe": recipe, "evaluation": evaluation}


rule train:
    input:
        unpack(lambda w: dag.train_inputs(config, w.backbone, w.k)),
        triplets_path="results/data/train/triplets.jsonl",
    output:
        model_dir=directory("results/runs/{backbone}/k{k}/model"),
        log_path="results/runs/{backbone}/k{k}/train_log.jsonl",
        prov_path="results/runs/{backbone}/k{k}/train_provenance.json",
        status_path="results/runs/{backbone}/k{k}/status.json",
    params:
        stage="train",
        kwargs=lambda w: {key: value for key, value in
                          dag.train_kwargs(results_config(config), CONFIG_FILE, w.backbone, w.k).items()
                          if key != "config_file"},
        # A function of `output`, so a derived param: outside the params rerun trigger. Checkpoints
        # live beside the outputs but are not outputs (Snakemake deletes the outputs of a failed job;
        # a restarted job must find them to resume); changing checkpoint_steps re-runs nothing, and
        # neither does the config file's name (only used to name it in error messages).
        runtime=lambda w, output: {
            "checkpoint_dir": os.path.join(os.path.dirname(output.log_path), "checkpoints"),
            "checkpoint_steps": config["recipe"].get("checkpoint_steps", 0),
            "processes": config.get("train_processes", "auto"),
            "config_file": CONFIG_FILE,
            "mirror": config.get("mirror"),
            "cache_dir": config.get("cache_dir", "cache"),
        },
    # All cores of the run (--cores N; inside a cluster job, the cores it sees). Submitting to a
    # cluster defines no cores (workflow.cores raises): 1, the job's CPUs are the profile's resources.
    threads: workflow.resource_settings.cores or 1
    resources:
        gpu=1 if config.get("use_gpu") else 0,
    log:
        "results/logs/train/{backbone}_k{k}.log",
    script:
        "../scripts/stage.py"
