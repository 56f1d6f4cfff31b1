"""Where every output of the DAG lives: content-addressed folders (the one place paths are built)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lsrbench.dag.fingerprint import FileDigests
from lsrbench.dag.folders import FOLDERS, ID_LENGTH, ID_REGEX, ID_WILDCARD, PARAMS_JSON, folder_id, pattern, short_id
from lsrbench.dag.stage import without_late_defaults
from lsrbench.hashing import stable_hash

__all__ = ["ID_LENGTH", "ID_REGEX", "FOLDERS", "PARAMS_JSON", "Addressed", "Layout", "pattern", "short_id"]

@dataclass(frozen=True)
class Addressed:
    """One addressed output folder: the stage that makes it, its kind, wildcard values, id and identity."""

    stage: str
    kind: str
    fields: dict
    identity: dict = field(repr=False)
    folder: str = ""

    @property
    def id(self) -> str:
        """The folder's own id."""
        return self.fields[ID_WILDCARD[self.kind]]

    @property
    def sha256(self) -> str:
        return stable_hash(self.identity)

    def path(self, name: str) -> str:
        return f"{self.folder}/{name}"

    def record(self) -> dict:
        """What its id stands for: the content of its ``params.json``."""
        return {"kind": self.kind, "id": self.id, "sha256": self.sha256, "identity": self.identity}


def _file_label(path) -> str:
    resolved = Path(path).resolve()
    try:
        return str(resolved.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(resolved)


def _wildcard_key(kind: str, fields: dict) -> str:
    ids = [name for name in ID_WILDCARD.values() if "{" + name + "}" in FOLDERS[kind]]
    return "/".join(str(fields.get(name)) for name in sorted(ids, key=FOLDERS[kind].index))


def _key_of(kind: str, key: dict) -> tuple:
    return (kind, tuple(sorted((name, str(v)) for name, v in key.items())))


class Layout:
    """Every addressed output of one checked config (:func:`lsrbench.validation.config.check_config`), from the
    stage declarations: ``layout.get("train", run=run, k=k).path("model")``; ``layout.find(kind, wildcards)``
    for the rules; :meth:`all` for ``lsrbench gc``."""

    def __init__(self, config: dict, results: str = "results", digests: FileDigests | None = None, *,
                 stages, config_file: str = "config", config_files: list[str] | None = None):
        # stages: the declarations (lsrbench.stages.all_stages()), in the order outputs are built
        self.config, self.results = config, results
        self.config_file = str(config_file)  # the file jobs name in their errors (never in an identity)
        # every file the config was read from (its base: chain too), as the config snapshot names them
        self.config_files = [_file_label(f) for f in (config_files or [config_file])]
        self.digests = digests or FileDigests(None)
        self.stages = {s.name: s for s in stages}
        self._stage_of: dict[tuple, object] = {}
        for stage in self.stages.values():
            for key in stage.grid(config):
                self._stage_of.setdefault(_key_of(stage.kind, key), (stage, key))
        self._memo: dict[tuple, Addressed] = {}
        self._by_id: dict[str, dict[str, Addressed]] | None = None

    # -- building ------------------------------------------------------------------------------

    def get(self, kind: str, **key) -> Addressed:
        """The addressed output of ``kind`` named by its key fields (``run``, ``k``, ``dataset``, ...)."""
        lookup = _key_of(kind, key)
        if lookup not in self._memo:
            if lookup not in self._stage_of:
                raise ValueError(f"{kind} {key}: not an output of the current config")
            stage, key = self._stage_of[lookup]
            self._memo[lookup] = self._make(stage, key)
        return self._memo[lookup]

    def _make(self, stage, key: dict) -> Addressed:
        fields = stage.folder_fields(self, key)
        identity = without_late_defaults(stage.identity(self, key), stage.late_settings)
        if stage.kind in ID_WILDCARD:
            fields = {**fields, ID_WILDCARD[stage.kind]: folder_id(stage.kind, identity)}
        folder = FOLDERS[stage.kind].format(results=self.results, **fields)
        return Addressed(stage.name, stage.kind, fields, identity, folder)

    def fingerprint(self, folder, names=None) -> dict:
        """A local folder's content, as identities record it (:mod:`lsrbench.dag.fingerprint`)."""
        return {"folder_sha256": self.digests.folder(Path(folder).expanduser(), names)}

    # -- lookups -------------------------------------------------------------------------------

    def all(self) -> list[Addressed]:
        """Every addressed output of the config, stage by stage in declaration order."""
        return [self.get(stage.kind, **key) for stage in self.stages.values() for key in stage.grid(self.config)]

    def of_stage(self, name: str) -> list[Addressed]:
        stage = self.stages[name]
        return [self.get(stage.kind, **key) for key in stage.grid(self.config)]

    def _index(self) -> dict[str, dict[str, Addressed]]:
        if self._by_id is None:
            self._by_id = {}
            for item in self.all():
                self._by_id.setdefault(item.kind, {})[_wildcard_key(item.kind, item.fields)] = item
        return self._by_id

    def id_regex(self, stage: str) -> str:
        """A wildcard constraint matching exactly the ids of the outputs ``stage`` makes."""
        ids = sorted({item.id for item in self.of_stage(stage)})
        return "|".join(ids) or "(?!)"

    def find(self, kind: str, wildcards) -> Addressed:
        """The addressed output a rule's wildcards name; ValueError when they are not the current
        config's (a target written by hand with another config's id)."""
        wanted = {key: str(v) for key, v in dict(wildcards.items()).items()}
        found = self._index().get(kind, {}).get(_wildcard_key(kind, wanted))
        if found is None or any(wanted.get(name, v) != v for name, v in found.fields.items()):
            raise ValueError(f"{pattern(kind)} with {wanted}: not an output of the current config")
        return found
