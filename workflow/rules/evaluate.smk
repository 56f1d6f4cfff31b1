rule evaluate:
    input:
        unpack(lambda w: dag.evaluate_inputs(L, w)),
    output:
        run_out=pattern("evaluate", "run.trec"),
        metrics_out=pattern("evaluate", "metrics.tsv"),
        perquery_out=pattern("evaluate", "perquery.tsv"),
        status_out=pattern("evaluate", "status.json"),
        prov_out=pattern("evaluate", "provenance.json"),
        params_json=pattern("evaluate", "params.json"),
    wildcard_constraints:
        train_id=L.id_regex("train"),
        index_id=L.id_regex("index"),
        eval_id=L.id_regex("evaluate"),
    params:
        stage="evaluate",
        identity=lambda w: dag.identity(L, "evaluate", w),
        kwargs=lambda w: dag.evaluate_kwargs(L, w),
    log:
        pattern("evaluate", "evaluate.log"),
    script:
        "../scripts/stage.py"


# FLOPs and active dims pooled over report.flops_datasets (NanoBEIR) as sentence-transformers'
# SparseNanoBEIREvaluator pools them; only when it names several datasets.
rule pooled_flops:
    input:
        unpack(lambda w: dag.pooled_inputs(L, w)),
    output:
        metrics_out=pattern("pooled", "metrics.tsv"),
        prov_out=pattern("pooled", "provenance.json"),
        params_json=pattern("pooled", "params.json"),
    wildcard_constraints:
        train_id=L.id_regex("train"),
        pooled_id=L.id_regex("pooled"),
    params:
        stage="pooled_flops",
        identity=lambda w: dag.identity(L, "pooled", w),
        kwargs=lambda w: dag.pooled_kwargs(L, w),
    log:
        pattern("pooled", "pooled_flops.log"),
    script:
        "../scripts/stage.py"


rule bm25:
    input:
        unpack(lambda w: dag.bm25_inputs(L, w)),
    output:
        run_out=pattern("bm25", "run.trec"),
        metrics_out=pattern("bm25", "metrics.tsv"),
        perquery_out=pattern("bm25", "perquery.tsv"),
        prov_out=pattern("bm25", "provenance.json"),
        params_json=pattern("bm25", "params.json"),
    wildcard_constraints:
        bm25_id=L.id_regex("bm25"),
    params:
        stage="bm25",
        identity=lambda w: dag.identity(L, "bm25", w),
        kwargs=lambda w: dag.bm25_kwargs(L, w),
    log:
        pattern("bm25", "bm25.log"),
    script:
        "../scripts/stage.py"
