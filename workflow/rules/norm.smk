rule norm:
    output:
        out_json="results/norms/{backbone}.json",
    params:
        stage="norm",
        kwargs=lambda w: dag.norm_kwargs(config, w.backbone),
        # Where errors point and where downloads go: not part of the result (outside the rerun trigger).
        runtime=lambda w, output: {"config_file": CONFIG_FILE, "mirror": config.get("mirror"),
                                   "cache_dir": config.get("cache_dir", "cache")},
    log:
        "results/logs/norm/{backbone}.log",
    script:
        "../scripts/stage.py"
