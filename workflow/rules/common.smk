# What every rule file uses, built once from the checked config (the Snakemake workflow template's
# common.smk): the content-addressed layout of this config's outputs (lsrbench.dag.layout) from the
# stage declarations (lsrbench.stages, passed in), their rule parts (S: lsrbench.dag.stage.StageRules;
# R: the report rules, lsrbench.report.reports), and the wildcard constraints.
from lsrbench.dag.fingerprint import FileDigests
from lsrbench.folder.state import DagHooks, FolderState
from lsrbench.folder.freshness import check_finished_inputs
from lsrbench.dag.layout import ID_REGEX, Layout
from lsrbench.dag.startup import jobs_start
from lsrbench.dag.stage import StageRules, job_threads
from lsrbench.report.config_record import report_config
from lsrbench.report.reports import report_rules
from lsrbench.names import DATASET_PATTERN, K_PATTERN, NAME_PATTERN, RUN_PATTERN
from lsrbench.stages import all_stages
from lsrbench.stages.mlm_refit import unshared_refits

# Every output in a folder named by the hash of what decides it: a config edit plans new folders
# beside the finished ones, which Snakemake then never re-runs or deletes. Local folders are
# fingerprinted through a cache of file digests (by path, inode, ctime, size and mtime), saved here.
DIGESTS = FileDigests("results/.cache/file-digests.json")
L = Layout(config, "results", DIGESTS, stages=all_stages(), config_file=CONFIG_FILE, config_files=READ)
try:
    STATE = None
    if workflow.is_main_process:
        # a damaged input of a finished output is refused before Snakemake re-runs (and so
        # deletes) what was computed from it; then every finished job is checked against what it
        # recorded (lsrbench.folder.state): a stale one in the DAG is made again, a changed
        # costly output, a file stamped in the future are one line here
        check_finished_inputs(L)
        STATE = FolderState(L, DIGESTS, report_rules(L), report_config).check()
        # an entry that looks like it shares a backbone's MLM re-fit but makes a second one: said here (dry runs too)
        for line in unshared_refits(L):
            print(f"lsrbench: note: {ORIGINS.file_for(line.split(':')[0])}: {line}", file=sys.stderr)
except OneLineError as exc:
    print(f"lsrbench: error: {exc}", file=sys.stderr)
    sys.exit(1)
# The rules' input functions tell HOOKS which jobs the DAG being built holds.
HOOKS = DagHooks(STATE, workflow)
S = StageRules(L, visit=HOOKS.job)
R = report_rules(L, visit=HOOKS.report)
try:
    S.check()  # every job function takes what its declaration gives it
except OneLineError as exc:
    print(f"lsrbench: error: {exc}", file=sys.stderr)
    sys.exit(1)
DIGESTS.save()


onstart:
    HOOKS.before_jobs()
    jobs_start()  # Ctrl-C is Snakemake's from here on; this run recorded as the lock's holder
# Threads of each train and index job (lsrbench.dag.stage.job_threads); one GPU each with use_gpu.
JOB_THREADS = job_threads(workflow.remote_exec, workflow.resource_settings.cores)
GPUS = 1 if config["use_gpu"] else 0


# The same patterns the config check holds run names and k to (lsrbench.names); each rule
# narrows its own id wildcard to the ids of the outputs its stage makes (S.constraints).
wildcard_constraints:
    run=RUN_PATTERN,
    k=K_PATTERN,
    dataset=DATASET_PATTERN,
    backbone=NAME_PATTERN,
    data_id=ID_REGEX,
    refit_id=ID_REGEX,
    norms_id=ID_REGEX,
    probe_id=ID_REGEX,
    triplets_id=ID_REGEX,
    train_id=ID_REGEX,
    index_id=ID_REGEX,
    eval_id=ID_REGEX,
    pooled_id=ID_REGEX,
    bm25_id=ID_REGEX,
    config_id=ID_REGEX,
    preflight_id=ID_REGEX,
