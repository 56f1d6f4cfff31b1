rule norm:
    output:
        out_json="results/norms/{run}.json",
    params:
        stage="norm",
        kwargs=lambda w: dag.norm_kwargs(config, w.run),
        # Where errors point and where downloads go: not part of the result (outside the rerun trigger).
        runtime=lambda w, output: {"config_file": CONFIG_FILE, "mirror": config["mirror"],
                                   "cache_dir": config["cache_dir"]},
    log:
        "results/logs/norm/{run}.log",
    script:
        "../scripts/stage.py"
