# Report rules (lsrbench.report.reports: each report's module declares what it reads, writes and runs): each reads cached
# run outputs and the config snapshot only, so deleting a report re-runs just its rule, and a
# settings change re-runs the reports. In `snakemake --report`, the Markdown reports appear as their
# HTML pages (results/html/), which it shows inline; the figures as they are; metrics.csv as a download.
# Each is listed under its title (its declaration's Shown), which the landing page links.
from lsrbench.report.landing import headline_image, landing_results, read_from, what_was_run

# What the landing page (workflow/report/workflow.rst) shows besides the config: its results with
# their captions, and where models and data were read from (as the jobs recorded it).
# The config snapshot every report of the folder was made with: a folder holding another config's
# reports is refused before the report is built (lsrbench.folder.state), so the page names theirs.
config["_report"].update(results=landing_results(config, os.path.join(workflow.basedir, "workflow", "report")),
                         read_from=read_from(L) if workflow.is_main_process else [],
                         snapshot={"id": L.get("configs").id, "path": L.get("configs").path("config.yaml")},
                         run=what_was_run(config),
                         # read only for the report (the one start that shows it), as the Snakefile's prefetch check
                         headline=headline_image() if any(a.split("=")[0] == "--report" for a in sys.argv[1:]) else None)


def shown(how):
    """Flags an output for `snakemake --report`, under its category and caption (and its title)."""
    return lambda path: report(path, category=how.category, caption=f"../report/{how.caption}.rst",
                               **({"labels": {"result": how.title}} if how.title else {}))


# One rule per report and per HTML page of a Markdown report (Snakemake's report shows .md files
# only as download links), each made from its declaration (lsrbench.report.reports).
for report_name in R.names():

    rule:
        name:
            report_name
        input:
            unpack(R.inputs(report_name)),
        output:
            **R.outputs(report_name, **{arg: shown(how) for arg, how in R.shown(report_name).items()}),
        params:
            **R.params(report_name),
        resources:
            **R.resources(report_name),
        script:
            "../scripts/run_job.py"
