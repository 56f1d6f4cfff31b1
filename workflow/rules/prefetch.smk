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
