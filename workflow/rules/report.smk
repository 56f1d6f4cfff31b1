rule collect:
    input:
        inputs=expand("results/runs/{run[backbone]}/k{run[k]}/{dataset}/metrics.tsv", run=RUNS, dataset=DATASETS),
    output:
        output="results/metrics.csv",
    params:
        stage="report",
        kwargs=lambda w: dag.report_kwargs(config, "collect"),
    script:
        "../scripts/stage.py"


rule table1:
    input:
        inputs="results/metrics.csv",
    output:
        output="results/table1.md",
    params:
        stage="report",
        kwargs=lambda w: dag.report_kwargs(config, "table1"),
    script:
        "../scripts/stage.py"


rule norms_table:
    input:
        inputs=expand("results/norms/{backbone}.json", backbone=list(config["backbones"])),
    output:
        output="results/norms.md",
    params:
        stage="report",
        kwargs=lambda w: {**dag.report_kwargs(config, "norms"), "norm_names": list(config["backbones"])},
    script:
        "../scripts/stage.py"


rule tradeoff:
    input:
        inputs="results/metrics.csv",
    output:
        output="results/tradeoff.png",
    params:
        stage="report",
        kwargs=lambda w: dag.report_kwargs(config, "tradeoff"),
    script:
        "../scripts/stage.py"
