# A backbone entry's MLM re-fit (docs/miniature.md): its checkpoint made into an MLM that never
# trained for retrieval, one job per distinct (checkpoint, settings); norm, probe and train load it.
rule mlm_refit:
    input:
        unpack(S.inputs("mlm_refit")),
    output:
        **S.outputs("mlm_refit"),
    wildcard_constraints:
        **S.constraints("mlm_refit"),
    params:
        **S.params("mlm_refit"),
    # One thread locally, as a train job; inside a cluster job the cores it was given.
    threads: JOB_THREADS
    resources:
        gpu=GPUS,
    log:
        S.log("mlm_refit"),
    priority: S.priority("mlm_refit")
    script:
        "../scripts/stage.py"
