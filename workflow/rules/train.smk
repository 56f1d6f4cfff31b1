rule train:
    input:
        norms_json="results/norms/{backbone}.json",
        triplets_path="results/data/train/triplets.jsonl",
    output:
        model_dir=directory("results/runs/{backbone}/k{k}/model"),
        log_path="results/runs/{backbone}/k{k}/train_log.jsonl",
        prov_path="results/runs/{backbone}/k{k}/train_provenance.json",
    params:
        stage="train",
        kwargs=lambda w: dag.train_kwargs(config, CONFIG_FILE, w.backbone, w.k),
    threads: workflow.cores
    resources:
        gpu=1 if config.get("use_gpu") else 0,
    log:
        "results/logs/train/{backbone}_k{k}.log",
    script:
        "../scripts/stage.py"
