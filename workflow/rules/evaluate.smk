rule evaluate:
    input:
        data_dir="results/data/{dataset}/eval",
        docs_npz="results/runs/{backbone}/k{k}/{dataset}/docs.npz",
        queries_npz="results/runs/{backbone}/k{k}/{dataset}/queries.npz",
    output:
        run_out="results/runs/{backbone}/k{k}/{dataset}/run.trec",
        metrics_out="results/runs/{backbone}/k{k}/{dataset}/metrics.tsv",
        perquery_out="results/runs/{backbone}/k{k}/{dataset}/perquery.tsv",
        prov_out="results/runs/{backbone}/k{k}/{dataset}/provenance.json",
    params:
        stage="evaluate",
        kwargs=lambda w: dag.evaluate_kwargs(config, w.backbone, w.k, w.dataset),
    log:
        "results/logs/evaluate/{backbone}_k{k}_{dataset}.log",
    script:
        "../scripts/stage.py"
