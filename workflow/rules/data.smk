rule dataset:
    output:
        full_dir=directory("results/data/{dataset}/full"),
        eval_dir=directory("results/data/{dataset}/eval"),
        eval_info="results/data/{dataset}/eval.json",
    params:
        stage="dataset",
        kwargs=lambda w: dag.dataset_kwargs(config, w.dataset),
    log:
        "results/logs/dataset/{dataset}.log",
    script:
        "../scripts/stage.py"


rule triplets:
    input:
        unpack(lambda w: dag.triplets_inputs(config)),
    output:
        out="results/data/train/triplets.jsonl",
    params:
        stage="triplets",
        kwargs=lambda w: dag.triplets_kwargs(config),
        # Where the triplets are read from, not what they are (a mirror holds the same triplets,
        # checked against training_data): a derived param, outside the params rerun trigger.
        runtime=lambda w, output: {"mirror": config["mirror"], "cache_dir": config["cache_dir"],
                                   "config_file": CONFIG_FILE},
    log:
        "results/logs/triplets.log",
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
