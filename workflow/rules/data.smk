# Data rules: each output in a content-addressed folder (lsrbench.stages says what decides
# it): a dataset by what its source holds (a local folder's bytes, else the source's own name),
# never by where it is read from (mirror, cache folder), which go in its runtime params.


rule dataset:
    input:
        unpack(S.inputs("dataset")),  # none: the input function tells the folder check the job is in the DAG
    output:
        **S.outputs("dataset"),
    wildcard_constraints:
        **S.constraints("dataset"),
    params:
        **S.params("dataset"),
    log:
        S.log("dataset"),
    priority: S.priority("dataset")
    script:
        "../scripts/stage.py"


# The evaluated subset of a dataset with evaluation.pool_depth (without it the full folder is
# evaluated): its own rule, so a new pool depth never re-writes the full folder that the
# training triplets are cropped from.
rule pool:
    input:
        unpack(S.inputs("pool")),
    output:
        **S.outputs("pool"),
    params:
        **S.params("pool"),
    log:
        S.log("pool"),
    priority: S.priority("pool")
    script:
        "../scripts/stage.py"


rule triplets:
    input:
        unpack(S.inputs("triplets")),
    output:
        **S.outputs("triplets"),
    wildcard_constraints:
        **S.constraints("triplets"),
    params:
        **S.params("triplets"),
    log:
        S.log("triplets"),
    priority: S.priority("triplets")
    script:
        "../scripts/stage.py"


# The config the reports are made with (results/configs/<id>/config.yaml): an input of every report.
rule config_snapshot:
    localrule: True
    input:
        unpack(S.inputs("config_snapshot")),  # none (as the dataset rule)
    output:
        **S.outputs("config_snapshot"),
    wildcard_constraints:
        **S.constraints("config_snapshot"),
    params:
        **S.params("config_snapshot"),
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
        from lsrbench.ops.prefetch import prefetch_or_exit

        prefetch_or_exit(config, CONFIG_FILE, config["mirror"], log[0])
