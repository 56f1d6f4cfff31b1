rule index:
    input:
        model_dir="results/runs/{backbone}/k{k}/model",
        data_dir="results/data/{dataset}/eval",
    output:
        docs_out="results/runs/{backbone}/k{k}/{dataset}/docs.npz",
        queries_out="results/runs/{backbone}/k{k}/{dataset}/queries.npz",
    params:
        stage="index",
        kwargs=lambda w: dag.index_kwargs(config, w.dataset),
    threads: workflow.cores
    log:
        "results/logs/index/{backbone}_k{k}_{dataset}.log",
    script:
        "../scripts/stage.py"
