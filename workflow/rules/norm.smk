rule norm:
    output:
        out_json="results/norms/{backbone}.json",
    params:
        stage="norm",
        kwargs=lambda w: dag.norm_kwargs(config, CONFIG_FILE, w.backbone),
    log:
        "results/logs/norm/{backbone}.log",
    script:
        "../scripts/stage.py"
