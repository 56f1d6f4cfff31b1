"""Evaluation of a run's vectors: exact top-k retrieval over an inverted index, TREC run files, effectiveness
through ir_measures and efficiency (FLOPs)."""
