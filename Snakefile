# lsrbench: norm -> train -> index -> evaluate for every (backbone, k), then the paper's tables.
#   snakemake --cores 2 results/table1.md [--config mirror=../shared] [--configfile config/paper.yaml]
import sys

from lsrbench.errors import InputError
from lsrbench.names import POOLED
from lsrbench.pipeline import params as dag
from lsrbench.pipeline.config import check_config, check_config_file, locate_config_paths

# A --configfile replaces the embedded default instead of being deep-merged into it, so one
# config's backbones never leak into another's run.
if not workflow.overwrite_configfiles:
    configfile: "config/config.yaml"
CONFIG_FILE = str(workflow.overwrite_configfiles[-1]) if workflow.overwrite_configfiles else "config/config.yaml"

try:
    for path in workflow.overwrite_configfiles or [CONFIG_FILE]:  # every --configfile, strictly
        check_config_file(str(path))
    config = check_config(locate_config_paths(config, workflow.basedir), CONFIG_FILE)
except InputError as exc:
    print(f"lsrbench: error: {exc}", file=sys.stderr)
    sys.exit(1)

RUNS = dag.run_grid(config)
DATASETS = config["evaluation"]["datasets"]

wildcard_constraints:
    run=dag.RUN_PATTERN,
    k="auto|[0-9]+(\\.[0-9]+)?(e-?[0-9]+)?",
    dataset=f"(?!{POOLED}\\b)[A-Za-z0-9][A-Za-z0-9._-]*",


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
