"""The report's figures: the effectiveness/FLOPs plane with its Pareto front, loss curves and head
norms, each drawn from the data written beside it, with labels that do not overlap."""
