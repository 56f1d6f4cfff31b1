rule norm:
    input:
        unpack(S.inputs("norm")),
    output:
        **S.outputs("norm"),
    wildcard_constraints:
        **S.constraints("norm"),
    params:
        **S.params("norm"),
    log:
        S.log("norm"),
    priority: S.priority("norm")
    script:
        "../scripts/stage.py"
