# Report rules: each reads cached run outputs only, so deleting a report re-runs just its rule.
# In `snakemake --report`, the Markdown reports appear as their HTML pages (results/html/), which
# it shows inline; the figures as they are; metrics.csv as a download.


rule collect:
    input:
        metric_files=dag.metric_files(L),
    output:
        output=report("results/metrics.csv", category="Tables", caption="../report/metrics.rst"),
        # the run files metrics.csv was made from (results/ also holds other configs' runs)
        sources="results/metrics.sources.json",
    params:
        stage="report_collect",
        kwargs={},
    script:
        "../scripts/stage.py"


rule table1:
    input:
        metrics_csv="results/metrics.csv",
        norm_files=dag.norm_files(L),
        # the paper's values printed beside ours: editing them re-runs this rule
        reference_file=[config["report"]["reference"]] if config["report"]["reference"] else [],
    output:
        output="results/table1.md",
        # every cell of table1.md with the metrics.csv rows it comes from (checked by lsrbench verify)
        cells="results/table1.cells.json",
    params:
        stage="report_table1",
        kwargs=lambda w: {**dag.report_kwargs(config), "norm_names": list(config["backbones"]),
                          "auto_k": config.get("auto_k")},
    script:
        "../scripts/stage.py"


rule table_beir:
    input:
        metrics_csv="results/metrics.csv",
    output:
        output="results/table_beir.md",
    params:
        stage="report_table_beir",
        kwargs=lambda w: dag.report_kwargs(config),
    script:
        "../scripts/stage.py"


rule norms_report:
    input:
        norm_files=dag.norm_files(L),
        metrics_csv="results/metrics.csv",
    output:
        out_md="results/norms.md",
        out_png=report("results/norms.png", category="Head norms", caption="../report/norms.rst"),
    params:
        stage="report_norms",
        kwargs=lambda w: {**dag.report_kwargs(config), "norm_names": list(config["backbones"]),
                          "auto_k": config.get("auto_k")},
    script:
        "../scripts/stage.py"


rule tradeoff:
    input:
        metrics_csv="results/metrics.csv",
    output:
        out_png=report("results/tradeoff.png", category="Figures", caption="../report/tradeoff.rst"),
        out_pdf="results/tradeoff.pdf",
    params:
        stage="report_tradeoff",
        kwargs=lambda w: dag.report_kwargs(config),
    script:
        "../scripts/stage.py"


rule loss_curves:
    input:
        log_files=dag.log_files(L),
    output:
        output=report("results/loss_curves.png", category="Figures", caption="../report/loss_curves.rst"),
    params:
        stage="report_loss_curves",
        kwargs=lambda w: {"log_keys": dag.log_keys(config), "backbones": dag.report_backbones(config)},
    script:
        "../scripts/stage.py"


rule claims:
    input:
        metrics_csv="results/metrics.csv",
        perquery_files=dag.perquery_files(L),
        norm_files=dag.norm_files(L),
        log_files=dag.log_files(L),
        # the paper's numbers and best k, shown beside ours: editing them re-runs this rule
        reference_file=[config["report"]["reference"]] if config["report"]["reference"] else [],
    output:
        output="results/claims.md",
        out_json="results/claims.json",
    params:
        stage="report_claims",
        kwargs=lambda w: {**dag.report_kwargs(config), "perquery_keys": dag.perquery_keys(config),
                          "norm_names": list(config["backbones"]), "log_keys": dag.log_keys(config),
                          "claims_cfg": config.get("claims")},
    # The randomization tests hold one batch of resamples x queries at a time (lsrbench.report.stats):
    # under 2 GB for BEIR-13's 33k queries (tests/report/test_stats.py measures it).
    resources:
        mem_mb=2000,
    script:
        "../scripts/stage.py"


# One HTML page per Markdown report (Snakemake's report shows .md files only as download links).
for page, category in dag.html_pages(config).items():

    rule:
        name:
            f"html_{page}"
        input:
            markdown=f"results/{page}.md",
        output:
            output=report(f"results/html/{page}.html", category=category, caption=f"../report/{page}.rst"),
        params:
            stage="report_html",
            kwargs={},
        script:
            "../scripts/stage.py"
