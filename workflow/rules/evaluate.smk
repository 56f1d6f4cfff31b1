rule evaluate:
    input:
        unpack(S.inputs("evaluate")),
    output:
        **S.outputs("evaluate"),
    wildcard_constraints:
        **S.constraints("evaluate"),
    params:
        **S.params("evaluate"),
    log:
        S.log("evaluate"),
    priority: S.priority("evaluate")
    script:
        "../scripts/stage.py"


# FLOPs and active dims pooled over report.flops_datasets (NanoBEIR) as sentence-transformers'
# SparseNanoBEIREvaluator pools them; only when it names several datasets.
rule pooled_flops:
    input:
        unpack(S.inputs("pooled_flops")),
    output:
        **S.outputs("pooled_flops"),
    wildcard_constraints:
        **S.constraints("pooled_flops"),
    params:
        **S.params("pooled_flops"),
    log:
        S.log("pooled_flops"),
    priority: S.priority("pooled_flops")
    script:
        "../scripts/stage.py"


rule bm25:
    input:
        unpack(S.inputs("bm25")),
    output:
        **S.outputs("bm25"),
    wildcard_constraints:
        **S.constraints("bm25"),
    params:
        **S.params("bm25"),
    log:
        S.log("bm25"),
    priority: S.priority("bm25")
    script:
        "../scripts/stage.py"
