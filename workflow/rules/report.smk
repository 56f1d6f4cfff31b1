# Report rules (lsrbench.dag.reports declares what each reads and is made with): each reads cached
# run outputs and the config snapshot only, so deleting a report re-runs just its rule, and a
# settings change re-runs the reports. In `snakemake --report`, the Markdown reports appear as their
# HTML pages (results/html/), which it shows inline; the figures as they are; metrics.csv as a download.
# Each is listed under its title (lsrbench.dag.landing.RESULTS), which the landing page links.
from lsrbench.dag.landing import landing_results, read_from, result_label

# What the landing page (workflow/report/workflow.rst) shows besides the config: its results with
# their captions, and where models and data were read from (as the jobs recorded it).
# The config snapshot every report of the folder was made with: a folder holding another config's
# reports is refused before the report is built (lsrbench.dag.folder_state), so the page names theirs.
config["_report"].update(results=landing_results(config, os.path.join(workflow.basedir, "workflow", "report")),
                         read_from=read_from(L) if workflow.is_main_process else [],
                         snapshot={"id": L.get("configs").id, "path": L.get("configs").path("config.yaml")})


def shown(category, caption, title=True):
    """Flags an output for `snakemake --report`, under its category and caption (and its title,
    lsrbench.dag.landing.RESULTS)."""
    return lambda path: report(path, category=category, caption=caption,
                               **({"labels": {"result": result_label(path)}} if title else {}))


rule collect:
    input:
        unpack(R.inputs("collect")),
    output:
        # metrics.sources.json: the run files metrics.csv was made from (results/ also holds other configs' runs)
        **R.outputs("collect", metrics_csv=shown("Tables", "../report/metrics.rst")),
    params:
        **R.params("collect"),
    script:
        "../scripts/run_job.py"


# What a random ranking of the evaluated documents scores (results/chance.json): the chance level the
# tables and the claims show beside the runs, computed from the evaluated data's judgments and size.
rule chance:
    input:
        unpack(R.inputs("chance")),
    output:
        **R.outputs("chance"),
    params:
        **R.params("chance"),
    script:
        "../scripts/run_job.py"


rule table1:
    input:
        unpack(R.inputs("table1")),
    output:
        # table1.cells.json: every cell of table1.md with the metrics.csv rows it comes from (lsrbench verify)
        **R.outputs("table1"),
    params:
        **R.params("table1"),
    script:
        "../scripts/run_job.py"


rule table_beir:
    input:
        unpack(R.inputs("table_beir")),
    output:
        **R.outputs("table_beir"),
    params:
        **R.params("table_beir"),
    script:
        "../scripts/run_job.py"


rule norms_report:
    input:
        unpack(R.inputs("norms_report")),
    output:
        # norms.data.json: what norms.png shows, the config and the files it was made from (lsrbench verify)
        **R.outputs("norms_report", norms_png=shown("Head norms", "../report/norms.rst")),
    params:
        **R.params("norms_report"),
    script:
        "../scripts/run_job.py"


rule tradeoff:
    input:
        unpack(R.inputs("tradeoff")),
    output:
        **R.outputs("tradeoff", tradeoff_png=shown("Figures", "../report/tradeoff.rst")),
    params:
        **R.params("tradeoff"),
    script:
        "../scripts/run_job.py"


rule loss_curves:
    input:
        unpack(R.inputs("loss_curves")),
    output:
        **R.outputs("loss_curves", loss_curves_png=shown("Figures", "../report/loss_curves.rst")),
    params:
        **R.params("loss_curves"),
    script:
        "../scripts/run_job.py"


rule claims:
    input:
        unpack(R.inputs("claims")),
    output:
        **R.outputs("claims"),
    params:
        **R.params("claims"),
    # The randomization tests hold one batch of resamples x queries at a time (lsrbench.report.stats):
    # under 2 GB for BEIR-13's 33k queries (tests/report/test_stats.py measures it).
    resources:
        mem_mb=2000,
    script:
        "../scripts/run_job.py"


# The step-0 probe of every backbone (docs/probe.md): before any training (results/probe.md, what
# `lsrbench probe` makes: it reads the probe files only), and beside the trained outcomes with the
# rank correlation between the probe's prediction and them (results/probe_outcomes.md).
rule probe_report:
    input:
        unpack(R.inputs("probe_report")),
    output:
        **R.outputs("probe_report", probe_png=shown("Probe", "../report/probe.rst", title=False)),
    params:
        **R.params("probe_report"),
    script:
        "../scripts/run_job.py"


rule probe_outcomes:
    input:
        unpack(R.inputs("probe_outcomes")),
    output:
        **R.outputs("probe_outcomes"),
    params:
        **R.params("probe_outcomes"),
    script:
        "../scripts/run_job.py"


# One HTML page per Markdown report (Snakemake's report shows .md files only as download links).
for page, category in html_pages(config).items():

    rule:
        name:
            f"{HTML_RULE}{page}"
        input:
            unpack(R.inputs(f"{HTML_RULE}{page}")),
        output:
            **R.outputs(f"{HTML_RULE}{page}", html=shown(category, f"../report/{page}.rst")),
        params:
            **R.params(f"{HTML_RULE}{page}"),
        script:
            "../scripts/run_job.py"
