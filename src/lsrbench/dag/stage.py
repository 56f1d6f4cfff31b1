"""One addressed stage, declared once (:class:`Stage`), and what the Snakemake rule of it is made of, derived from
that declaration only (:class:`StageRules`): its outputs, inputs, wildcard constraints, log and params, and the
call of its job function."""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass, field
from typing import Callable

from lsrbench.dag.folders import ID_WILDCARD, PARAMS_JSON, pattern

__all__ = ["Stage", "LateSetting", "as_list", "StageRules", "call_settings", "canonical", "without_late_defaults",
           "job_threads"]


def _nothing(*args) -> dict:
    return {}


def _own_key(layout, key: dict) -> dict:
    return dict(key)


@dataclass(frozen=True)
class LateSetting:
    """A setting added after results had been made: where an identity holds it (``path``, dotted)
    and where its default is (``schema``: the schema file and the path to its object, ``*`` for
    every entry of a mapping: :func:`lsrbench.config.schema.property_defaults`)."""

    path: str
    schema: tuple


def without_late_defaults(identity: dict, late: tuple) -> dict:
    """The one rule for old folders: a late setting enters an identity only when it differs from
    its schema default, so every folder made before the setting existed keeps its id."""
    from lsrbench.config.schema import property_defaults

    if not late:
        return identity
    identity = copy.deepcopy(identity)
    for setting in late:
        *parents, name = setting.path.split(".")
        holder = identity
        for part in parents:
            holder = holder.get(part, {})
        if name in holder and holder[name] == property_defaults(*setting.schema)[name]:
            del holder[name]
    return identity


@dataclass(frozen=True)
class Stage:
    """The declaration of one addressed stage: what decides its output (its identity, which names its folder), what
    it reads and writes, its runtime-only settings and the job function it runs."""

    name: str
    kind: str
    grid: Callable[[dict], list[dict]]
    identity: Callable
    outputs: dict[str, str]
    inputs: Callable = _nothing
    runtime: Callable = _nothing
    folder_fields: Callable = _own_key
    log: str | None = ""
    priority: int = 0
    remade_if_changed: bool = False
    late_settings: tuple = ()
    model_job: bool = False
    local: bool = False
    constraints: dict = field(default_factory=dict)
    job: Callable | None = field(default=None, repr=False)


def job_threads(remote_exec: bool, cores: int | None) -> int:
    """Threads of a train or index job: locally one (two one-thread jobs side by side ran the tiny default 1.22x
    faster on 2 cores, benchmark/results/dag_schedule.json, and a job's numbers then do not depend on the
    machine's cores); in a cluster job the cores it was given."""
    return max(1, int(cores or 1)) if remote_exec else 1


def as_list(x) -> list[str]:
    """A Snakemake input that may be one path or several, as a list."""
    return [x] if isinstance(x, str) else list(x)


def canonical(value):
    """``value`` with every mapping sorted by key (recursively): one form for params that two
    configs differing only in key order share."""
    if isinstance(value, dict):
        return {key: canonical(value[key]) for key in sorted(value, key=str)}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    return value


def _parameters(function) -> dict[str, inspect.Parameter]:
    return {n: p for n, p in inspect.signature(function).parameters.items()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def call_settings(function, item) -> dict:
    """The arguments of ``function`` that come from an addressed output's identity (or its folder's
    wildcards, or ``config_hash``): those the function names, nothing else."""
    available = {**item.fields, **item.identity, "config_hash": item.sha256}
    return {name: available[name] for name in _parameters(function) if name in available}


class StageRules:
    """The Snakemake side of the declarations of one :class:`~lsrbench.dag.layout.Layout`: what each
    rule's ``output``, ``input``, ``params``, ``wildcard_constraints`` and ``log`` are."""

    def __init__(self, layout, visit: Callable[[list[str]], None] = lambda outputs: None):
        # visit: told the outputs of each job the DAG being built holds (lsrbench.folder.state.DagHooks)
        self.layout, self.visit = layout, visit

    def _stage(self, name: str) -> Stage:
        return self.layout.stages[name]

    def outputs(self, name: str) -> dict:
        from snakemake.io import directory

        stage = self._stage(name)
        out = {arg: directory(pattern(stage.kind, file[:-1])) if file.endswith("/") else pattern(stage.kind, file)
               for arg, file in stage.outputs.items()}
        return {**out, "params_json": pattern(stage.kind, PARAMS_JSON)}

    def names(self) -> list[str]:
        """Every declared stage: one rule each."""
        return list(self.layout.stages)

    def log(self, name: str) -> dict:
        """The rule's log, by name (none where the stage declares ``log=None``)."""
        log = self._stage(name).log
        return {} if log is None else {"job_log": pattern(self._stage(name).kind, log or f"{name}.log")}

    def priority(self, name: str) -> int:
        return self._stage(name).priority

    def local(self, name: str) -> bool:
        return self._stage(name).local

    def threads(self, name: str, model_threads: int) -> int:
        """``model_threads`` for a job that runs a model, else one."""
        return model_threads if self._stage(name).model_job else 1

    def resources(self, name: str, gpus: int) -> dict:
        """``gpu``: the GPUs of a job that runs a model (lsrbench.pipeline.gpus); nothing for the others."""
        return {"gpu": gpus} if self._stage(name).model_job else {}

    def _item(self, name: str, wildcards):
        return self.layout.find(self._stage(name).kind, wildcards)

    def inputs(self, name: str) -> Callable:
        """An input function (use with ``unpack``): the named inputs of the output the wildcards name
        (and ``visit`` is told that job's outputs)."""
        def inputs(wildcards):
            stage, item = self._stage(name), self._item(name, wildcards)
            self.visit([item.path(file.rstrip("/")) for file in stage.outputs.values()] + [item.path(PARAMS_JSON)])
            return stage.inputs(self.layout, item)
        return inputs

    def params(self, name: str) -> dict:
        """``stage`` (the job function), ``settings`` (its arguments from the identity, canonical),
        and, as functions of ``output`` (outside Snakemake's params comparison), ``identity`` (the
        ``params.json`` record), ``runtime`` and ``use_gpu``."""
        function = self._stage(name).job
        return {
            "stage": name,
            "settings": lambda w: canonical(call_settings(function, self._item(name, w))),
            "identity": lambda w, output: canonical(self._item(name, w).record()),
            "runtime": lambda w, output: self._stage(name).runtime(self.layout, self._item(name, w)),
            # the config's use_gpu for a job that runs a model: it then needs a GPU whatever a profile gave it
            "use_gpu": lambda w, output: bool(self.layout.config["use_gpu"] and self._stage(name).model_job),
        }

    def constraints(self, name: str) -> dict:
        """The rule's own id wildcard matches exactly the ids of the outputs this stage makes."""
        kind = self._stage(name).kind
        own = {ID_WILDCARD[kind]: self.layout.id_regex(name)} if kind in ID_WILDCARD else {}
        return {**own, **self._stage(name).constraints}

    def check(self) -> None:
        """Bind every declared stage's job function to its first output (if the config has one):
        a job function that is not registered, an argument nothing provides, or an output, input
        or runtime setting the function does not take is a ValueError naming both."""
        for name, stage in self.layout.stages.items():
            if stage.job is None:
                raise ValueError(f"stage {name}: no job function declared")
            items = self.layout.of_stage(name)
            if items:
                _check_binding(name, stage.job, stage, self.layout, items[0])


def _check_binding(name: str, function, stage: Stage, layout, item) -> None:
    params = _parameters(function)
    takes_any = any(p.kind == p.VAR_KEYWORD for p in inspect.signature(function).parameters.values())
    given = {"outputs": set(stage.outputs), "inputs": set(stage.inputs(layout, item)),
             "runtime": set(stage.runtime(layout, item))}
    for what, names in given.items():
        unknown = [] if takes_any else sorted(names - set(params))
        if unknown:
            raise ValueError(f"stage {name}: {what} {', '.join(unknown)} are not arguments of {function.__qualname__}")
    provided = set().union(*given.values()) | set(call_settings(function, item))
    missing = [n for n, p in params.items() if n not in provided and p.default is inspect.Parameter.empty]
    if missing:
        raise ValueError(f"stage {name}: nothing provides {', '.join(missing)} of {function.__qualname__}")

