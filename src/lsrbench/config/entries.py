"""A dataset registry entry read once into a typed object with the schema's defaults, so no caller repeats a
default."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from lsrbench.config.schema import property_defaults, validate
from lsrbench.config.strict_yaml import load_yaml

__all__ = ["DatasetEntry", "dataset_entry", "load_datasets_file"]


@dataclass(frozen=True)
class DatasetEntry:
    """One dataset of the registry: ``source`` picks the :class:`lsrbench.data.sources.Source`; the rest are its
    keys (None: not given)."""

    name: str
    source: str
    split: str
    unknown_docs: str
    skip_identical_ids: bool
    hf_split: str
    empty_results: str
    empty_queries: str
    path: str | None = None
    id: str | None = None
    repo: str | None = None
    revision: str | None = None
    subsets: dict | None = None
    measures: list[str] | None = None
    md5: str | None = None  # a BEIR download's published MD5
    download: str | None = field(default=None)  # the entry's ``name:`` (a BEIR download name)

    @classmethod
    def from_dict(cls, name: str, values: dict) -> "DatasetEntry":
        """From a registry entry; what it leaves out is the schema's default."""
        known = {f.name for f in fields(cls)} - {"name", "download"}
        values = {**property_defaults("datasets.schema.yaml", "*"), **values}
        return cls(name=name, download=values.get("name"), **{k: v for k, v in values.items() if k in known})

    def as_dict(self) -> dict:
        """The entry as the registry writes it (``name`` is the BEIR download name), defaults filled."""
        out = {k: v for k, v in asdict(self).items() if v is not None and k not in ("name", "download")}
        if self.download is not None:
            out["name"] = self.download
        return out

    def has(self, key: str) -> bool:
        """Whether the registry entry gives ``key`` (``name``: the BEIR download name)."""
        return (self.download if key == "name" else getattr(self, key, None)) is not None


def dataset_entry(config: dict, name: str) -> DatasetEntry:
    """The typed entry of dataset ``name`` of a checked config (its registry: ``config["_datasets"]``)."""
    return DatasetEntry.from_dict(name, config["_datasets"][name])


def load_datasets_file(path) -> dict:
    """The dataset registry file, read strictly and validated against its schema (defaults filled)."""
    return validate(load_yaml(path), "datasets.schema.yaml", path)
