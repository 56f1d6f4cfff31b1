"""Commands on a config or a results folder that are not pipeline stages: plan, prefetch, gc, status, preflight
and the probe command."""
