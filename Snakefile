# lsrbench: norm -> train -> index -> evaluate for every (backbone, k), then the paper's tables.
#   snakemake --cores 2                                   # every report of config/config.yaml
#   snakemake --cores 2 results/table1.md --configfile my.yaml --config mirror=../shared
# (targets before --configfile/--config: those options take several values and swallow a target)
import os
import sys

from lsrbench.dag.startup import guard_startup

if workflow.is_main_process:
    guard_startup()  # Ctrl-C before the first job, a folder another run has locked: one line each

from lsrbench.config.grid import grid_lines
from lsrbench.config.layers import load_config_files, locate_config_paths
from lsrbench.report.reports import report_outputs
from lsrbench.folder.state import refuse_results_folder_as_workdir
from lsrbench.validation.config import check_config
from lsrbench.validation.files import record_path
from lsrbench.errors import OneLineError

# A --configfile replaces the embedded default instead of being deep-merged into it, so one
# config's backbones never leak into another's run; a file that wants the default under it says
# so with `base: config/config.yaml` (docs/configuration.md).
if not workflow.overwrite_configfiles:
    if not os.path.isfile("config/config.yaml"):  # snakemake -s .../Snakefile in a folder of its own
        print(f"lsrbench: error: {os.getcwd()}: no config/config.yaml here: run snakemake in the lsrbench checkout, "
              f"or give a config (--configfile {os.path.join(workflow.basedir, 'config', 'config.yaml')})",
              file=sys.stderr)
        sys.exit(1)
    configfile: "config/config.yaml"
CONFIG_FILES = [str(p) for p in workflow.overwrite_configfiles] or ["config/config.yaml"]
CONFIG_FILE = CONFIG_FILES[-1]

# Everything lsrbench check-config checks, before the DAG is built: a bad config, dataset or model
# is one line and no job runs (a dry run shows it too). The files a config names are checked by
# the main process only, not again by each job a cluster executor starts from this Snakefile, and
# not again while they are unchanged (the record: .snakemake/, or $LSRBENCH_CHECKED_INPUTS).
try:
    # run in the folder that holds results/, not in results/ itself (it would be planned anew inside it)
    refuse_results_folder_as_workdir()
    # Every file strictly (duplicate keys, line of a syntax error), with its base: chain, merged in
    # order, then the --config values; Snakemake's own merge of the files is replaced by this one.
    merged, ORIGINS, READ = load_config_files(CONFIG_FILES, workflow.config_settings.config)
    config.clear()
    config.update(merged)
    # A named mirror must exist (else datasets and models would silently be downloaded), except
    # for the prefetch target, which creates it. Snakemake tells a Snakefile nothing of its
    # targets, hence the command line.
    checked = check_config(locate_config_paths(config, workflow.basedir), CONFIG_FILE, ORIGINS,
                           files=workflow.is_main_process, record=record_path(),
                           mirror_must_exist="prefetch" not in sys.argv[1:])
    config.clear()
    config.update(checked)  # canonical (the schema's key order), defaults filled, registry under _datasets
except OneLineError as exc:  # bad input, or lsrbench's incompatibility with a library
    print(f"lsrbench: error: {exc}", file=sys.stderr)
    sys.exit(1)
# the base files too, in the report's list of config files (jobs get only the command line's)
KNOWN = {os.path.abspath(str(f)) for f in workflow.configfiles}
workflow.configfiles.extend(f for f in READ if os.path.abspath(f) not in KNOWN)
# What the report's landing page (workflow/report/workflow.rst) shows of this run.
config["_report"] = {"config_files": READ, "grid": grid_lines(config)}

# The stage declarations made into rules (lsrbench.stages, lsrbench.dag): the layout of this
# config's outputs, one rule per stage, the report rules; checks before any job.
include: "workflow/rules/common.smk"
include: "workflow/rules/stages.smk"
include: "workflow/rules/prefetch.smk"
include: "workflow/rules/report.smk"


report: "workflow/report/workflow.rst"


rule all:
    input:
        report_outputs(config),
