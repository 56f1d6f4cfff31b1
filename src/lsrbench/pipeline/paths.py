"""Where every output of the DAG lives: content-addressed folders (the one place paths are built).

Each output that costs compute lives in a folder named by its *id*: the first 12 hex digits of
:func:`lsrbench.hashing.stable_hash` of its *identity*, exactly the settings that decide its bytes
plus the ids of the outputs it reads. The readable part stays in front
(``results/runs/<run>/k<k>/<train id>/<dataset>/<index id>/<eval id>/metrics.tsv``), and each
folder holds a ``params.json`` saying what its id stands for. So a config edit plans new
folders beside the old ones (Snakemake never re-runs, hence never deletes, a finished output),
reverting it finds the old folders again, and an edit re-runs exactly the outputs whose identity
it changes: a new learning rate re-trains but keeps data and norms, a new ``top_k`` re-evaluates
but keeps the vectors. Why not Snakemake's params trigger: it re-runs a job in place, deleting the
finished output first (and again when the job fails). See docs/results-layout.md.

Where things come from or how a job runs is in no identity: mirror, cache folder, config file
name, thread and process counts, checkpoint cadence, shard size. A local folder (a BEIR dataset
path, a model checkpoint folder) is identified by a fingerprint of its files' bytes
(:mod:`lsrbench.pipeline.fingerprint`), never by its spelling; a named source (an ir_datasets id,
a BEIR download name, a hub id with its revision or pinned wheel digests) by its name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lsrbench.hashing import stable_hash
from lsrbench.names import AUTO_K, POOLED, split_run_name
from lsrbench.pipeline.fingerprint import FileDigests

__all__ = ["ID_LENGTH", "ID_REGEX", "FOLDERS", "PARAMS_JSON", "Addressed", "Layout", "pattern", "short_id",
           "docs_dataset", "pooled_flops_datasets", "load_entry", "results_recipe", "RUNTIME_RECIPE_KEYS", "RUNTIME_EVALUATION_KEYS"]

ID_LENGTH = 12
ID_REGEX = f"[0-9a-f]{{{ID_LENGTH}}}"
PARAMS_JSON = "params.json"  # beside every addressed output: what its id stands for

# Every addressed folder, by kind; {results} is the results folder, the rest are the rules' wildcards.
FOLDERS = {
    "data": "{results}/data/{dataset}/{data_id}",
    "pool": "{results}/data/{dataset}/{data_id}/pool{pool_depth}",
    "norms": "{results}/norms/{backbone}/{norms_id}",
    "triplets": "{results}/triplets/{triplets_id}",
    "train": "{results}/runs/{run}/k{k}/{train_id}",
    "index": "{results}/runs/{run}/k{k}/{train_id}/{dataset}/{index_id}",
    "evaluate": "{results}/runs/{run}/k{k}/{train_id}/{dataset}/{index_id}/{eval_id}",
    "pooled": "{results}/runs/{run}/k{k}/{train_id}/" + POOLED + "/{pooled_id}",
    "bm25": "{results}/bm25/{dataset}/{bm25_id}",
}
# The wildcard holding each kind's own id (pool folders are named by their depth instead).
ID_WILDCARD = {"data": "data_id", "norms": "norms_id", "triplets": "triplets_id", "train": "train_id",
               "index": "index_id", "evaluate": "eval_id", "pooled": "pooled_id", "bm25": "bm25_id"}

# Settings that say how a job runs, not what it computes: in no identity.
RUNTIME_RECIPE_KEYS = ("checkpoint_steps", "report_to")
RUNTIME_EVALUATION_KEYS = ("encode_shard_size",)
# The backbone keys that decide what is loaded (labels, k lists and modes do not change a result).
LOAD_KEYS = ("model", "revision", "trust_remote_code", "head_scale", "fetch")


def pattern(kind: str, name: str = "", results: str = "results") -> str:
    """A rule's path pattern: the folder of ``kind`` with its wildcards, then ``name`` inside it."""
    folder = FOLDERS[kind].replace("{results}", results)
    return f"{folder}/{name}" if name else folder


def short_id(identity) -> str:
    return stable_hash(identity)[:ID_LENGTH]


@dataclass(frozen=True)
class Addressed:
    """One addressed output folder: its kind, wildcard values, id and identity."""

    kind: str
    fields: dict
    identity: dict = field(repr=False)
    folder: str = ""

    @property
    def id(self) -> str:
        """The folder's own id (a pool folder is named by its depth: ``pool<depth>``)."""
        if self.kind == "pool":
            return f"pool{self.fields['pool_depth']}"
        return self.fields[ID_WILDCARD[self.kind]]

    @property
    def sha256(self) -> str:
        return stable_hash(self.identity)

    def path(self, name: str) -> str:
        return f"{self.folder}/{name}"


def _key(kind: str, fields: dict) -> str:
    if kind == "pool":
        return f"{fields.get('data_id')}/pool{fields.get('pool_depth')}"
    return str(fields.get(ID_WILDCARD[kind]))


def load_entry(config: dict, backbone: str) -> dict:
    """A backbone entry's keys that decide what is loaded, as written in the config."""
    entry = config["backbones"][backbone]
    return {k: entry[k] for k in LOAD_KEYS if k in entry}


def results_recipe(config: dict) -> dict:
    """The recipe as it determines results (``checkpoint_steps`` only says how often to save,
    ``report_to`` where the trainer also reports)."""
    return {k: v for k, v in config["recipe"].items() if k not in RUNTIME_RECIPE_KEYS}


def pooled_flops_datasets(config: dict) -> list[str]:
    """The datasets whose FLOPs are pooled per run: report.flops_datasets when it names several
    (one dataset's pooled FLOPs are its own, so then there is nothing to pool)."""
    names = list(config["report"].get("flops_datasets") or [])
    return names if len(names) > 1 else []


def docs_dataset(config: dict, dataset: str) -> str:
    """The evaluated dataset whose ``docs.npz`` ``dataset`` is scored against: the first of
    ``evaluation.datasets`` with the same corpus (:func:`lsrbench.data.sources.corpus_key`) when
    full collections are evaluated (``pool_depth: null``), so MS MARCO's 8.8M passages are encoded
    once per run for MS MARCO Dev and TREC DL 2019; itself when each dataset is pooled (its own
    subset of documents)."""
    if config["evaluation"]["pool_depth"]:
        return dataset
    from lsrbench.data.sources import corpus_key

    first: dict = {}
    for name in config["evaluation"]["datasets"]:
        first.setdefault(corpus_key(config["_datasets"][name]), name)
    entry = config["_datasets"].get(dataset)
    return first.get(corpus_key(entry), dataset) if entry is not None else dataset


class Layout:
    """Every addressed output of one checked config (:func:`lsrbench.pipeline.validate.check_config`),
    built once: ``layout.train(run, k).path("model")``; ``layout.find(kind, wildcards)`` for the
    rules; :meth:`all` for ``lsrbench gc``. Local folders are fingerprinted through ``digests``
    (cached in ``<results>/.cache/file-digests.json`` unless given)."""

    def __init__(self, config: dict, results: str = "results", digests: FileDigests | None = None):
        self.config, self.results = config, results
        self.digests = digests or FileDigests(Path(results) / ".cache" / "file-digests.json")
        self._memo: dict[tuple, Addressed] = {}
        self._by_id: dict[str, dict[str, Addressed]] = {}
        self._all = self._build()
        self.digests.save()

    # -- lookups -------------------------------------------------------------------------------

    def all(self) -> list[Addressed]:
        return list(self._all)

    def ids(self, kind: str) -> list[str]:
        """The current config's ids of ``kind`` (``pool``: ``<data id>/pool<depth>``)."""
        return sorted(self._by_id.get(kind, {}))

    def id_regex(self, kind: str, released: bool | None = None) -> str:
        """A wildcard constraint matching exactly the current config's ids of ``kind``; for
        ``train``, ``released`` selects the released (``evaluate_only``) runs or the trained ones."""
        ids = [key for key, item in self._by_id.get(kind, {}).items()
               if released is None or bool(item.identity.get("released")) == released]
        return "|".join(sorted(ids)) or "(?!)"

    def find(self, kind: str, wildcards) -> Addressed:
        """The addressed output a rule's wildcards name; ValueError when they are not the current
        config's (a target written by hand with another config's id)."""
        wanted = {k: str(v) for k, v in dict(wildcards.items()).items()}
        found = self._by_id.get(kind, {}).get(_key(kind, wanted))
        if found is None or any(wanted.get(k, v) != v for k, v in found.fields.items()):
            raise ValueError(f"{pattern(kind)} with {wanted}: not an output of the current config")
        return found

    def _add(self, kind: str, fields: dict, identity: dict) -> Addressed:
        if kind in ID_WILDCARD:
            fields = {**fields, ID_WILDCARD[kind]: short_id(identity)}
        folder = FOLDERS[kind].format(results=self.results, **fields)
        item = Addressed(kind, fields, identity, folder)
        self._by_id.setdefault(kind, {})[_key(kind, fields)] = item
        return item

    def _memoized(self, key: tuple, make) -> Addressed:
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    # -- the grid ------------------------------------------------------------------------------

    def _build(self) -> list[Addressed]:
        from lsrbench.pipeline.config import runs

        c = self.config
        datasets = list(c["evaluation"]["datasets"])
        out = [self.norms(b) for b in c["backbones"]] + [self.triplets()]
        out += [self.data(d) for d in dict.fromkeys(datasets + ([c["training_data"]["dataset"]]
                                                               if c["training_data"]["source"] == "pseudo_queries" else []))]
        out += [self.pool(d) for d in datasets if self.pool_depth(d)]
        for run, k in runs(c):
            out += [self.train(run, k)] + [self.index(run, k, d) for d in datasets]
            out += [self.evaluate(run, k, d) for d in datasets]
            if pooled_flops_datasets(c):
                out.append(self.pooled(run, k))
        if c["report"]["bm25"]:
            out += [self.bm25(d) for d in datasets]
        return out

    def corpus_store(self) -> str:
        """One copy of each distinct corpus file, hard-linked into the dataset folders
        (:func:`lsrbench.data.store.write_beir_folder`)."""
        return f"{self.results}/data/.corpora"

    # -- identities: exactly what decides each output ----------------------------------------

    def pool_depth(self, dataset: str):
        """The pool depth of an evaluated dataset (None: the full collection, or not evaluated)."""
        return self.config["evaluation"]["pool_depth"] if dataset in self.config["evaluation"]["datasets"] else None

    def local_folder_sha256(self, folder, names=None) -> dict:
        return {"folder_sha256": self.digests.folder(folder, names)}

    def source_identity(self, name: str) -> dict:
        """What a dataset entry's data is: a local folder's bytes (the mirror's copy when the
        mirror holds it, as the dataset stage reads it), else the source's own name for it."""
        from lsrbench.data.sources import SOURCES, mirrored_folder

        entry = self.config["_datasets"][name]
        split = entry.get("split", "test")
        if entry["source"] == "beir" and "path" in entry:
            folder = mirrored_folder(self.config.get("mirror"), name) or Path(entry["path"])
            return {"source": "beir", **self.local_folder_sha256(
                folder, ["corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"])}
        if entry["source"] == "hf" and entry.get("revision") is None and Path(entry["repo"]).is_dir():
            return {"source": "hf", "hf_split": entry.get("hf_split", "train"), "subsets": entry.get("subsets"),
                    **self.local_folder_sha256(entry["repo"])}
        return {"source": entry["source"], **{k: entry[k] for k in SOURCES[entry["source"]].keys if k in entry}}

    def data(self, dataset: str) -> Addressed:
        """A dataset in BEIR layout (``full/``): its source's data, split and qrels policy."""
        def make():
            return self._add("data", {"dataset": dataset}, {"dataset": dataset, "source": self.source_identity(dataset),
                                                           **self.load_data(dataset)})
        return self._memoized(("data", dataset), make)

    def load_data(self, dataset: str) -> dict:
        """How the stages after the dataset rule read its folder: the qrels split and the policy
        for judgments of unknown documents."""
        entry = self.config["_datasets"][dataset]
        # empty_queries only when it drops: with the default (error) a dataset's folder is the same
        # as before the setting existed, so finished data keeps its id
        drop = {"empty_queries": "drop"} if entry.get("empty_queries", "error") == "drop" else {}
        return {"split": entry.get("split", "test"), "unknown_docs": entry.get("unknown_docs", "error"), **drop}

    def pool(self, dataset: str) -> Addressed:
        """The pooled subset of an evaluated dataset (``eval/``), named by its depth."""
        depth, data = self.pool_depth(dataset), self.data(dataset)
        return self._memoized(("pool", dataset), lambda: self._add(
            "pool", {**data.fields, "pool_depth": str(depth)}, {"data": data.id, "pool_depth": depth}))

    def eval_dir(self, dataset: str) -> str:
        """The BEIR folder a dataset is indexed and evaluated on: pooled, or the full one."""
        return self.pool(dataset).path("eval") if self.pool_depth(dataset) else self.data(dataset).path("full")

    def eval_data(self, dataset: str) -> str:
        """The identity of the evaluated data: ``<data id>`` or ``<data id>/pool<depth>``."""
        data = self.data(dataset)
        return f"{data.id}/pool{self.pool_depth(dataset)}" if self.pool_depth(dataset) else data.id

    def load_identity(self, backbone: str) -> dict:
        """What a backbone loads: a local checkpoint folder's bytes, else the hub id / wheel digests."""
        entry = load_entry(self.config, backbone)
        model = str(entry["model"])
        if Path(model).expanduser().is_dir():
            entry["model"] = self.local_folder_sha256(Path(model).expanduser())
        return entry

    def norms(self, backbone: str) -> Addressed:
        return self._memoized(("norms", backbone), lambda: self._add(
            "norms", {"backbone": backbone}, {"backbone": backbone, "load": self.load_identity(backbone)}))

    def training_data(self) -> dict:
        """``training_data`` without its mirror folder name, a local hf folder by its bytes."""
        td = {k: v for k, v in self.config["training_data"].items() if k != "name"}
        if td["source"] == "hf" and td.get("revision") is None and Path(td["repo"]).is_dir():
            td["repo"] = self.local_folder_sha256(td["repo"])
        return td

    def n_triplets(self) -> int:
        """How many triplets are drawn: ``training_data.n_triplets``, else one per example of the recipe."""
        td, recipe = self.config["training_data"], self.config["recipe"]
        return td.get("n_triplets") or max(1, recipe["steps"]) * recipe["batch_size"]

    def triplets(self) -> Addressed:
        def make():
            td = self.config["training_data"]
            corpus = {"corpus": self.data(td["dataset"]).id} if td["source"] == "pseudo_queries" else {}
            return self._add("triplets", {}, {"training_data": self.training_data(), "n": self.n_triplets(),
                                              "seed": td["seed"], **corpus})
        return self._memoized(("triplets",), make)

    def train(self, run: str, k: str) -> Addressed:
        """A trained model; for an ``evaluate_only`` backbone, its checkpoint as released (no
        triplets, no recipe but the max lengths an MLM checkpoint is made into a SparseEncoder with)."""
        def make():
            base, mode = split_run_name(run)
            if self.config["backbones"][base].get("evaluate_only"):
                recipe = self.config["recipe"]
                return self._add("train", {"run": run, "k": k}, {
                    "run": run, "k": k, "load": self.load_identity(base), "released": True,
                    "query_max_length": recipe["query_max_length"], "document_max_length": recipe["document_max_length"],
                    "norms": self.norms(base).id})
            identity = {"run": run, "k": k, "load": self.load_identity(base), "mode": mode,
                        "recipe": results_recipe(self.config), "triplets": self.triplets().id,
                        "norms": self.norms(base).id}
            if k == AUTO_K:
                auto = self.config["auto_k"]
                identity.update(auto_k=auto, reference_norms=self.norms(auto["reference"]).id)
            return self._add("train", {"run": run, "k": k}, identity)
        return self._memoized(("train", run, k), make)

    def encoding(self) -> dict:
        """The index stage's settings (``evaluation`` keys that decide the vectors)."""
        ev = self.config["evaluation"]
        return {"batch_size": ev["encode_batch_size"], "precision": ev["encode_precision"],
                "query_max_length": ev["query_max_length"], "document_max_length": ev["document_max_length"]}

    def index(self, run: str, k: str, dataset: str) -> Addressed:
        def make():
            train = self.train(run, k)
            return self._add("index", {**train.fields, "dataset": dataset},
                             {"train": train.id, "data": self.eval_data(dataset), **self.encoding()})
        return self._memoized(("index", run, k, dataset), make)

    def measures(self, dataset: str) -> list[str]:
        """The measures of a dataset: its entry's own, else ``evaluation.measures``."""
        return list(self.config["_datasets"][dataset].get("measures") or self.config["evaluation"]["measures"])

    def scoring(self, dataset: str) -> dict:
        """The settings that decide a dataset's run file and metrics from its vectors."""
        entry, ev = self.config["_datasets"][dataset], self.config["evaluation"]
        return {"top_k": ev["top_k"], "measures": self.measures(dataset),
                "skip_identical_ids": entry.get("skip_identical_ids", False)}

    def evaluate(self, run: str, k: str, dataset: str) -> Addressed:
        def make():
            queries = self.index(run, k, dataset)
            docs = self.index(run, k, docs_dataset(self.config, dataset))
            return self._add("evaluate", queries.fields, {
                "run": run, "k": k, "dataset": dataset, "train": queries.fields["train_id"], "docs": docs.id,
                "queries": queries.id, **self.scoring(dataset),
                "collapse_max_active_share": self.config["evaluation"]["collapse_max_active_share"]})
        return self._memoized(("evaluate", run, k, dataset), make)

    def pooled(self, run: str, k: str) -> Addressed:
        def make():
            names = pooled_flops_datasets(self.config)
            train = self.train(run, k)
            docs = [self.index(run, k, docs_dataset(self.config, d)).id for d in names]
            return self._add("pooled", train.fields, {"run": run, "k": k, "datasets": names, "docs": docs,
                                                      "queries": [self.index(run, k, d).id for d in names]})
        return self._memoized(("pooled", run, k), make)

    def bm25(self, dataset: str) -> Addressed:
        return self._memoized(("bm25", dataset), lambda: self._add(
            "bm25", {"dataset": dataset}, {"dataset": dataset, "data": self.eval_data(dataset),
                                          **self.scoring(dataset), "settings": self.config["report"]["bm25_settings"]}))

    def docs_npz(self, run: str, k: str, dataset: str) -> str:
        """The docs.npz ``dataset`` is scored against (another dataset's on a shared corpus)."""
        return self.index(run, k, docs_dataset(self.config, dataset)).path("docs.npz")
