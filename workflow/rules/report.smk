# Report rules (lsrbench.dag.reports declares what each reads and is made with): each reads cached
# run outputs and the config snapshot only, so deleting a report re-runs just its rule, and a
# settings change re-runs the reports. In `snakemake --report`, the Markdown reports appear as their
# HTML pages (results/html/), which it shows inline; the figures as they are; metrics.csv as a download.
# Each is listed under its title (lsrbench.dag.landing.RESULTS), which the landing page links.
from lsrbench.dag.landing import landing_results, read_from, result_label

# What the landing page (workflow/report/workflow.rst) shows besides the config: its results with
# their captions, and where models and data were read from (as the jobs recorded it).
config["_report"].update(results=landing_results(config, os.path.join(workflow.basedir, "workflow", "report")),
                         read_from=read_from(L) if workflow.is_main_process else [])


rule collect:
    input:
        **R.inputs("collect"),
    output:
        metrics_csv=report("results/metrics.csv", category="Tables", caption="../report/metrics.rst",
            labels={"result": result_label("results/metrics.csv")}),
        # the run files metrics.csv was made from (results/ also holds other configs' runs)
        sources_json="results/metrics.sources.json",
    params:
        **R.params("collect"),
    script:
        "../scripts/stage.py"


# What a random ranking of the evaluated documents scores (results/chance.json): the chance level the
# tables and the claims show beside the runs, computed from the evaluated data's judgments and size.
rule chance:
    input:
        **R.inputs("chance"),
    output:
        chance_json="results/chance.json",
    params:
        **R.params("chance"),
    script:
        "../scripts/stage.py"


rule table1:
    input:
        **R.inputs("table1"),
    output:
        table1_md="results/table1.md",
        # every cell of table1.md with the metrics.csv rows it comes from (checked by lsrbench verify)
        cells_json="results/table1.cells.json",
    params:
        **R.params("table1"),
    script:
        "../scripts/stage.py"


rule table_beir:
    input:
        **R.inputs("table_beir"),
    output:
        table_beir_md="results/table_beir.md",
    params:
        **R.params("table_beir"),
    script:
        "../scripts/stage.py"


rule norms_report:
    input:
        **R.inputs("norms_report"),
    output:
        norms_md="results/norms.md",
        norms_png=report("results/norms.png", category="Head norms", caption="../report/norms.rst",
            labels={"result": result_label("results/norms.png")}),
        # what norms.png shows, the config and the files it was made from (checked by lsrbench verify)
        data_json="results/norms.data.json",
    params:
        **R.params("norms_report"),
    script:
        "../scripts/stage.py"


rule tradeoff:
    input:
        **R.inputs("tradeoff"),
    output:
        tradeoff_png=report("results/tradeoff.png", category="Figures", caption="../report/tradeoff.rst",
            labels={"result": result_label("results/tradeoff.png")}),
        tradeoff_pdf="results/tradeoff.pdf",
        data_json="results/tradeoff.data.json",
    params:
        **R.params("tradeoff"),
    script:
        "../scripts/stage.py"


rule loss_curves:
    input:
        **R.inputs("loss_curves"),
    output:
        loss_curves_png=report("results/loss_curves.png", category="Figures", caption="../report/loss_curves.rst",
            labels={"result": result_label("results/loss_curves.png")}),
        data_json="results/loss_curves.data.json",
    params:
        **R.params("loss_curves"),
    script:
        "../scripts/stage.py"


rule claims:
    input:
        **R.inputs("claims"),
    output:
        claims_md="results/claims.md",
        claims_json="results/claims.json",
    params:
        **R.params("claims"),
    # The randomization tests hold one batch of resamples x queries at a time (lsrbench.report.stats):
    # under 2 GB for BEIR-13's 33k queries (tests/report/test_stats.py measures it).
    resources:
        mem_mb=2000,
    script:
        "../scripts/stage.py"


# The step-0 probe of every backbone (docs/probe.md): before any training (results/probe.md, what
# `lsrbench probe` makes: it reads the probe files only), and beside the trained outcomes with the
# rank correlation between the probe's prediction and them (results/probe_outcomes.md).
rule probe_report:
    input:
        **R.inputs("probe_report"),
    output:
        probe_md="results/probe.md",
        probe_json="results/probe.json",
        probe_png=report("results/probe.png", category="Probe", caption="../report/probe.rst"),
    params:
        **R.params("probe_report"),
    script:
        "../scripts/stage.py"


rule probe_outcomes:
    input:
        **R.inputs("probe_outcomes"),
    output:
        outcomes_md="results/probe_outcomes.md",
        outcomes_json="results/probe_outcomes.json",
    params:
        **R.params("probe_outcomes"),
    script:
        "../scripts/stage.py"


# One HTML page per Markdown report (Snakemake's report shows .md files only as download links).
for page, category in html_pages(config).items():

    rule:
        name:
            f"html_{page}"
        input:
            markdown=f"results/{page}.md",
        output:
            html=report(f"results/html/{page}.html", category=category, caption=f"../report/{page}.rst",
                        labels={"result": result_label(f"results/html/{page}.html")}),
        params:
            stage="report_html",
        script:
            "../scripts/stage.py"
