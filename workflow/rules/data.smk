rule dataset:
    output:
        full_dir=directory("results/data/{dataset}/full"),
        eval_dir=directory("results/data/{dataset}/eval"),
        eval_info="results/data/{dataset}/eval.json",
    params:
        stage="dataset",
        kwargs=lambda w: dag.dataset_kwargs(config, w.dataset),
    log:
        "results/logs/dataset/{dataset}.log",
    script:
        "../scripts/stage.py"


rule triplets:
    input:
        full_dir=f"results/data/{config['training_data']['dataset']}/full",
    output:
        out="results/data/train/triplets.jsonl",
    params:
        stage="triplets",
        kwargs=lambda w: dag.triplets_kwargs(config),
    log:
        "results/logs/triplets.log",
    script:
        "../scripts/stage.py"
