rule train:
    input:
        unpack(S.inputs("train")),
    output:
        **S.outputs("train"),
    wildcard_constraints:
        **S.constraints("train"),
    params:
        **S.params("train"),
    # One thread locally, jobs side by side; inside a cluster job the cores it was given.
    threads: JOB_THREADS
    resources:
        gpu=GPUS,
    log:
        S.log("train"),
    priority: S.priority("train")
    script:
        "../scripts/stage.py"


# A backbone with `evaluate_only: true` (a released, already trained sparse encoder): the same
# outputs as train, made from the checkpoint as released (no training, no triplets, k = 1), so
# index, evaluate and every report treat it like a trained run.
rule released:
    input:
        unpack(S.inputs("released")),
    output:
        **S.outputs("released"),
    wildcard_constraints:
        **S.constraints("released"),
        k="1",
    params:
        **S.params("released"),
    log:
        S.log("released"),
    priority: S.priority("released")
    script:
        "../scripts/stage.py"
