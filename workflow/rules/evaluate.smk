rule evaluate:
    input:
        data_dir="results/data/{dataset}/eval",
        docs_npz=lambda w: dag.docs_npz(config, w.run, w.k, w.dataset),
        queries_npz="results/runs/{run}/k{k}/{dataset}/queries.npz",
        train_status="results/runs/{run}/k{k}/status.json",
    output:
        run_out="results/runs/{run}/k{k}/{dataset}/run.trec",
        metrics_out="results/runs/{run}/k{k}/{dataset}/metrics.tsv",
        perquery_out="results/runs/{run}/k{k}/{dataset}/perquery.tsv",
        status_out="results/runs/{run}/k{k}/{dataset}/status.json",
        prov_out="results/runs/{run}/k{k}/{dataset}/provenance.json",
    params:
        stage="evaluate",
        kwargs=lambda w: {
            **dag.evaluate_kwargs(dag.results_config(config), w.run, w.k, w.dataset),
            "collapse_max_active_share": config["evaluation"]["collapse_max_active_share"],
        },
    log:
        "results/logs/evaluate/{run}_k{k}_{dataset}.log",
    script:
        "../scripts/stage.py"


# FLOPs and active dims pooled over report.flops_datasets (NanoBEIR) as sentence-transformers'
# SparseNanoBEIREvaluator pools them; only when it names several datasets.
rule pooled_flops:
    input:
        unpack(lambda w: dag.pooled_inputs(config, w.run, w.k)),
    output:
        metrics_out=f"results/runs/{{run}}/k{{k}}/{POOLED}/metrics.tsv",
        prov_out=f"results/runs/{{run}}/k{{k}}/{POOLED}/provenance.json",
    params:
        stage="pooled_flops",
        kwargs=lambda w: {"run": w.run, "k": w.k, "datasets": dag.pooled_flops_datasets(config)},
    log:
        "results/logs/evaluate/{run}_k{k}_pooled_flops.log",
    script:
        "../scripts/stage.py"


rule bm25:
    input:
        data_dir="results/data/{dataset}/eval",
    output:
        run_out="results/bm25/{dataset}/run.trec",
        metrics_out="results/bm25/{dataset}/metrics.tsv",
        perquery_out="results/bm25/{dataset}/perquery.tsv",
        prov_out="results/bm25/{dataset}/provenance.json",
    params:
        stage="bm25",
        kwargs=lambda w: dag.bm25_kwargs(config, w.dataset),
    log:
        "results/logs/bm25/{dataset}.log",
    script:
        "../scripts/stage.py"
