# lsrbench: norm -> train -> index -> evaluate for every (backbone, k), then the paper's tables.
#   snakemake --cores 2                                   # every report of config/config.yaml
#   snakemake --cores 2 results/table1.md --configfile my.yaml --config mirror=../shared
# (targets before --configfile/--config: those options take several values and swallow a target)
import os
import sys

from lsrbench.errors import InputError
from lsrbench.names import DATASET_PATTERN, K_PATTERN, NAME_PATTERN, RUN_PATTERN
from lsrbench.pipeline import params as dag
from lsrbench.pipeline.config import grid_lines, load_config_files, locate_config_paths
from lsrbench.pipeline.paths import ID_REGEX, Layout, pattern
from lsrbench.pipeline.validate import check_config
from lsrbench.pipeline.validate_files import RECORD

# A --configfile replaces the embedded default instead of being deep-merged into it, so one
# config's backbones never leak into another's run; a file that wants the default under it says
# so with `base: config/config.yaml` (docs/configuration.md).
if not workflow.overwrite_configfiles:
    configfile: "config/config.yaml"
CONFIG_FILES = [str(p) for p in workflow.overwrite_configfiles] or ["config/config.yaml"]
CONFIG_FILE = CONFIG_FILES[-1]

# Everything lsrbench check-config checks, before the DAG is built: a bad config, dataset or model
# is one line and no job runs (a dry run shows it too). The files a config names are checked by
# the main process only, not again by each job a cluster executor starts from this Snakefile, and
# not again while they are unchanged (RECORD).
try:
    # Every file strictly (duplicate keys, line of a syntax error), with its base: chain, merged in
    # order, then the --config values; Snakemake's own merge of the files is replaced by this one.
    merged, ORIGINS, READ = load_config_files(CONFIG_FILES, workflow.config_settings.config)
    config.clear()
    config.update(merged)
    # A named mirror must exist (else datasets and models would silently be downloaded), except
    # for the prefetch target, which creates it. Snakemake tells a Snakefile nothing of its
    # targets, hence the command line.
    config = check_config(locate_config_paths(config, workflow.basedir), CONFIG_FILE, ORIGINS,
                          files=workflow.is_main_process, record=RECORD,
                          mirror_must_exist="prefetch" not in sys.argv[1:])
except InputError as exc:
    print(f"lsrbench: error: {exc}", file=sys.stderr)
    sys.exit(1)
# the base files too, in the report's list of config files (jobs get only the command line's)
KNOWN = {os.path.abspath(str(f)) for f in workflow.configfiles}
workflow.configfiles.extend(f for f in READ if os.path.abspath(f) not in KNOWN)
# What the report's landing page (workflow/report/workflow.rst) shows of this run.
config["_report"] = {"config_files": READ, "grid": grid_lines(config)}

# Every output in a folder named by the hash of what decides it (lsrbench.pipeline.paths): a config
# edit plans new folders beside the finished ones, which Snakemake then never re-runs or deletes.
L = Layout(config)
DATASETS = config["evaluation"]["datasets"]
# Threads of each train and index job (lsrbench.pipeline.params.job_threads).
JOB_THREADS = dag.job_threads(workflow.remote_exec, workflow.resource_settings.cores)

# The same patterns the config check holds run names and k to (lsrbench.names).
wildcard_constraints:
    run=RUN_PATTERN,
    k=K_PATTERN,
    dataset=DATASET_PATTERN,
    backbone=NAME_PATTERN,
    pool_depth="[0-9]+",
    data_id=ID_REGEX,
    norms_id=ID_REGEX,
    triplets_id=ID_REGEX,
    train_id=ID_REGEX,
    index_id=ID_REGEX,
    eval_id=ID_REGEX,
    pooled_id=ID_REGEX,
    bm25_id=ID_REGEX,


include: "workflow/rules/data.smk"
include: "workflow/rules/norm.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/index.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/report.smk"


report: "workflow/report/workflow.rst"


rule all:
    input:
        dag.report_outputs(config),
