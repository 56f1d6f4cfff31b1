"""Operations on a config or a results folder that are not stages of the DAG: plan (the bill),
prefetch (the offline mirror), gc, status and the probe command."""
