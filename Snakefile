# lsrbench: norm -> train -> index -> evaluate for every (backbone, k), then the paper's tables.
#   snakemake --cores 2 results/table1.md [--config mirror=../shared] [--configfile config/paper.yaml]
import sys

from lsrbench.errors import InputError
from lsrbench.names import DATASET_PATTERN, K_PATTERN, POOLED, RUN_PATTERN
from lsrbench.pipeline import params as dag
from lsrbench.pipeline.config import check_config_file, locate_config_paths
from lsrbench.pipeline.validate import check_config
from lsrbench.pipeline.validate_files import RECORD

# A --configfile replaces the embedded default instead of being deep-merged into it, so one
# config's backbones never leak into another's run.
if not workflow.overwrite_configfiles:
    configfile: "config/config.yaml"
CONFIG_FILE = str(workflow.overwrite_configfiles[-1]) if workflow.overwrite_configfiles else "config/config.yaml"

# Everything lsrbench check-config checks, before the DAG is built: a bad config, dataset or model
# is one line and no job runs (a dry run shows it too). The files a config names are checked by
# the main process only, not again by each job a cluster executor starts from this Snakefile, and
# not again while they are unchanged (RECORD).
try:
    for path in workflow.overwrite_configfiles or [CONFIG_FILE]:  # every --configfile, strictly
        check_config_file(str(path))
    config = check_config(locate_config_paths(config, workflow.basedir), CONFIG_FILE,
                          files=workflow.is_main_process, record=RECORD)
except InputError as exc:
    print(f"lsrbench: error: {exc}", file=sys.stderr)
    sys.exit(1)

RUNS = dag.run_grid(config)
DATASETS = config["evaluation"]["datasets"]

# The same patterns the config check holds run names and k to (lsrbench.names).
wildcard_constraints:
    run=RUN_PATTERN,
    k=K_PATTERN,
    dataset=DATASET_PATTERN,


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
