rule norm:
    output:
        out_json=pattern("norms", "norms.json"),
        params_json=pattern("norms", "params.json"),
    wildcard_constraints:
        norms_id=L.id_regex("norms"),
    params:
        stage="norm",
        identity=lambda w: dag.identity(L, "norms", w),
        kwargs=lambda w: dag.norm_kwargs(L, w),
        # The entry as written (a local folder's path), where errors point and where downloads go:
        # not part of the result (outside the rerun trigger; the folder's bytes are in the id).
        runtime=lambda w, output: dag.norm_runtime(L, w, CONFIG_FILE),
    log:
        pattern("norms", "norm.log"),
    script:
        "../scripts/stage.py"
