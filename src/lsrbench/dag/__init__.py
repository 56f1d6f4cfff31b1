"""The DAG side of lsrbench: each stage's declaration (what decides its folder id, its inputs, outputs
and settings), the results layout, the folder-state checks and the report rules the Snakefile reads."""
