"""Real-size smoke of the paper path on CPU: each backbone family of config/paper.yaml built at its
real size from its published config (``lsrbench.model.public_configs``: layers, widths, heads,
vocabulary, the head's tying and bias; random weights; a stand-in tokenizer where the real one is
not on this machine) and run through norm -> train (the paper's recipe and lengths: queries 32 and
documents 256 tokens, fused pooling) -> index (one encode batch of the paper's 128 documents at the
evaluation's 256 tokens; ``--docs``) -> evaluate, by Snakemake on the repository's Snakefile, one family and
one target at a time, with a config that is config/paper.yaml (``base:``) with the backbone pointed
at the built folder. Per family: peak memory and wall time of each stage's job (the process tree of
one ``snakemake`` target: ``os.wait4``'s maximum resident set, which the job process dominates),
the training steps' wall seconds read from the train job's own progress lines and their CPU
seconds (the job process's, read as each line appears: what other processes on shared cores do not
inflate), documents per second of the index job, the bytes each stage wrote, the FLOPs of a training step and of a document
(``lsrbench.index.roofline``), and the CPU's own fp32 matmul peak measured in the same run.

The paper's batch (32 triplets of a query and two 256-token documents) needs more memory in fp32 on
a CPU than a shared 24 GiB machine has (a training at batch 32 was killed by the kernel at
17,603,304 kB = 16.8 GiB anonymous resident set while others' jobs held the rest), so training runs
at smaller batches (``--batches``, default 2 and 4) with everything else as the paper's; peak memory
and step seconds at the paper's batch are the straight line through them (activations and compute
grow with the batch's tokens at fixed lengths; the model, its gradients, its AdamW state and the
update of the head do not), marked extrapolated, with what that adds to the uncertainty in the
record (``paper_batch``, :func:`paper_batch_note`). ``--batches 4,8,32`` runs the paper's batch
where it fits.

    nice -n 10 .venv/bin/python benchmark/real_size_smoke.py            # results/real_size_smoke.json
    .venv/bin/python benchmark/real_size_smoke.py --quick                # ALBERT, batches 2 and 4, 48 documents

``lsrbench plan`` reads the JSON (``families``, by hub id) as real-size CPU calibration. The step
times are a CPU calibration on shared cores: the load average is recorded beside each stage.
Stand-in tokenizer: bert-base-uncased's WordPiece vocabulary (the shared SPLADE-tiny checkpoint's,
the real tokenizer of BERT and DistilBERT, GTE-en's padded to 30,528), cut or padded to the
family's vocabulary size with its special tokens moved to the ids the published config names;
every document here fills its 256 tokens anyway (see :func:`smoke_collection`)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, SHARED, command_line, machine_info, write_result  # noqa: E402
from real_size_record import (annotate, at_paper_batch, merge_records, not_one_clean_commit, paper_batch_note,  # noqa: E402, F401
                               resumed_runs)

SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile")]
STAGES = (("norm", "norms", "norms.json"), ("train", "train", "status.json"), ("index", "index", "docs.npz"),
          ("evaluate", "evaluate", "metrics.tsv"))
SLICE = "smoke-vaswani"  # evaluated: a few hundred documents
TRAIN = "smoke-vaswani-all"  # the pseudo-queries' corpus: every joined document, enough for distinct batches


# -------------------------------------------------------------------------- the checkpoint

def stand_in_tokenizer(config: dict, out: Path):
    """bert-base-uncased's WordPiece tokenizer with exactly ``config``'s vocabulary size, its special
    tokens at the ids the config names (pad, cls/bos, sep/eos; unk and mask where the family's
    tokenizer puts them), filler tokens that no text produces beyond the 30,522 real entries."""
    from tokenizers import Tokenizer, models, processors
    from transformers import PreTrainedTokenizerFast

    source = json.loads((SHARED / "models" / "splade-tiny-msmarco" / "tokenizer.json").read_text())
    vocab = [t for t, _ in sorted(source["model"]["vocab"].items(), key=lambda kv: kv[1])]
    size = int(config["vocab_size"])
    vocab = vocab[:size] + [f"[unused_standin_{i}]" for i in range(size - len(vocab))]
    wanted = _special_ids(config, size)
    for token, target in wanted.items():  # swap each special token into its id
        here = vocab.index(token)
        vocab[here], vocab[target] = vocab[target], vocab[here]
    ids = {t: i for i, t in enumerate(vocab)}
    tok = Tokenizer.from_str(json.dumps(source))
    tok.model = models.WordPiece(ids, unk_token="[UNK]", max_input_chars_per_word=100)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]",
                                   unk_token="[UNK]", mask_token="[MASK]", bos_token="[CLS]", eos_token="[SEP]")
    fast.model_max_length = 512
    fast.save_pretrained(out)
    return fast


def _special_ids(config: dict, size: int) -> dict:
    """Where a family's tokenizer puts its special tokens, from its config's ids."""
    model_type = config["model_type"]
    if model_type in ("bert", "distilbert", "new"):
        return {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102, "[MASK]": 103}
    if model_type == "albert":  # SentencePiece: <pad> 0, <unk> 1, [CLS] 2, [SEP] 3, [MASK] 4
        return {"[PAD]": config["pad_token_id"], "[UNK]": 1, "[CLS]": config["bos_token_id"],
                "[SEP]": config["eos_token_id"], "[MASK]": 4}
    if model_type == "roberta":  # <s> 0, <pad> 1, </s> 2, <unk> 3, <mask> last
        return {"[CLS]": config["bos_token_id"], "[PAD]": config["pad_token_id"], "[SEP]": config["eos_token_id"],
                "[UNK]": 3, "[MASK]": size - 1}
    if model_type == "modernbert":  # [UNK] 50280, [CLS] 50281, [SEP] 50282, [PAD] 50283, [MASK] 50284
        return {"[UNK]": config["cls_token_id"] - 1, "[CLS]": config["cls_token_id"], "[SEP]": config["sep_token_id"],
                "[PAD]": config["pad_token_id"], "[MASK]": config["pad_token_id"] + 1}
    raise ValueError(f"no stand-in tokenizer layout for model_type {model_type!r}")


def build_checkpoint(model: str, out: Path, seed: int = 0) -> dict:
    """A random ``*ForMaskedLM`` of ``model``'s published config saved in ``out`` with a stand-in
    tokenizer (the real one for bert-base-uncased's vocabulary); returns its description."""
    import torch
    from transformers import AutoModelForMaskedLM

    from lsrbench.model.public_configs import PUBLIC_CONFIGS, config_object, public_config

    config = public_config(model)
    if config is None:
        raise SystemExit(f"real_size_smoke: no published config of {model} in lsrbench.model.public_configs")
    torch.manual_seed(seed)
    mlm = AutoModelForMaskedLM.from_config(config_object(config))  # GTE-MLM: lsrbench.model.gte's class
    mlm.save_pretrained(out)
    tok = stand_in_tokenizer(config, out)
    real = config["model_type"] in ("bert", "distilbert", "new")  # GTE-en: BERT's uncased WordPiece, padded
    return {"model": model, "config_source": PUBLIC_CONFIGS[model]["source"], "architecture": type(mlm).__name__,
            "parameters": sum(p.numel() for p in mlm.parameters()), "vocab_size": config["vocab_size"],
            "tokenizer": f"bert-base-uncased's own WordPiece (the shared SPLADE-tiny's), {len(tok)} ids" if real
            else f"stand-in: bert-base-uncased WordPiece padded/cut to {len(tok)} tokens, special ids as the config's"}


# -------------------------------------------------------------------------- the data and config

def smoke_collection(out: Path, n_docs: int | None, n_queries: int, min_words: int = 300) -> dict:
    """A BEIR folder of real Vaswani texts long enough to fill 256 tokens: consecutive abstracts (the
    judged ones of the first ``n_queries`` queries first) joined until a document has ``min_words``
    words, the first ``n_docs`` of them (None: all); a document is relevant to a query when one of
    its abstracts is. Every training and index batch then meets the paper's upper bound of a
    document's length (256 tokens)."""
    from lsrbench.data.beir import load_beir_folder

    ds = load_beir_folder(SHARED / "data" / "vaswani")
    qids = list(ds.queries)[:n_queries]
    order = list(dict.fromkeys([d for q in qids for d in ds.qrels[q]] + list(ds.corpus)))
    docs, members, current = {}, {}, []
    for abstract in order:
        current.append(abstract)
        if sum(len(ds.corpus[a].split()) for a in current) >= min_words:
            doc = f"s{len(docs)}"
            docs[doc] = " ".join(ds.corpus[a] for a in current)
            members.update({a: doc for a in current})
            current = []
            if len(docs) == n_docs:
                break
    qrels = sorted({(q, members[d], 1) for q in qids for d in ds.qrels[q] if d in members})
    queries = sorted({q for q, _, _ in qrels})
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"_id": d, "title": "", "text": t}) + "\n" for d, t in docs.items())
    with open(out / "queries.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"_id": q, "text": ds.queries[q]}) + "\n" for q in queries)
    (out / "qrels").mkdir(exist_ok=True)
    (out / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in qrels))
    return {"documents": len(docs), "queries": len(queries), "judgments": len(qrels), "min_words": min_words}


def smoke_config(tmp: Path, backbone: str, folder: Path, paper: dict, steps: int, batch: int, n_triplets: int) -> Path:
    """config/paper.yaml (``base:``) with ``backbone`` alone, loaded from ``folder``, at k = 1, trained
    ``steps`` steps of ``batch`` triplets; the recipe's lengths and everything else of the recipe and
    the evaluation as the paper's; triplets cropped from the smoke collection (MS MARCO's are not on
    this machine); no claims, no probe."""
    import yaml

    # a first layer drops the paper's training data and claims (null removes a mapping), the second sets its own
    dropped = tmp / "paper-without-training-data.yaml"
    dropped.write_text(yaml.safe_dump({"base": str(REPO / "config" / "paper.yaml"), "training_data": None,
                                       "claims": None}, sort_keys=False))
    layer = {
        "base": str(dropped),
        "mirror": None, "use_gpu": False, "cache_dir": str(tmp / "cache"),
        "datasets_file": str(tmp / "datasets.yaml"),
        "k_grid": [1], "modes": ["shared"],
        "backbones": {**{b: None for b in paper["backbones"] if b != backbone},
                      backbone: {"model": str(folder), "revision": None, "trust_remote_code": False,
                                 **({"modes": None} if "modes" in paper["backbones"][backbone] else {})}},
        "auto_k": {"reference": backbone},
        "training_data": {"source": "pseudo_queries", "dataset": TRAIN, "n_triplets": n_triplets, "seed": 12},
        "recipe": {"steps": steps, "batch_size": batch, "checkpoint_steps": 0},
        "evaluation": {"datasets": [SLICE]},
        "probe": {"with_grid": False},
        "report": {"columns": [{"name": "smoke nDCG@10", "datasets": [SLICE], "measure": "nDCG@10"}],
                   "flops_datasets": [SLICE], "bm25": False, "reference": None},
    }
    path = tmp / f"{backbone}-batch{batch}.yaml"
    path.write_text(yaml.safe_dump(layer, sort_keys=False))
    return path


def targets(config_path: Path, backbone: str) -> dict:
    """Each stage's output of the one run (k = 1), as Snakemake targets relative to the workdir."""
    from lsrbench.config.layers import load_config_files, locate_config_paths, workflow_dir
    from lsrbench.dag.fingerprint import FileDigests
    from lsrbench.dag.layout import Layout
    from lsrbench.stages import all_stages
    from lsrbench.validation.config import check_config

    config, origins, read = load_config_files([str(config_path)])
    config = check_config(locate_config_paths(config, workflow_dir()), str(config_path), origins)
    layout = Layout(config, "results", FileDigests(None), stages=all_stages(), config_file=str(config_path),
                    config_files=read)
    key = {"run": backbone, "k": "1"}
    items = {"norm": layout.get("norms", backbone=backbone), "train": layout.get("train", **key),
             "index": layout.get("index", **key, dataset=SLICE), "evaluate": layout.get("evaluate", **key, dataset=SLICE),
             "triplets": layout.get("triplets"), "data": layout.get("data", dataset=SLICE)}
    return {name: item for name, item in items.items()}


# -------------------------------------------------------------------------- running and reading

class StepClock(threading.Thread):
    """The CPU seconds of a running train job at the end of each of its steps: its progress lines
    (one per step here) watched as they are written, the job process's user + system time read then
    (every 0.1 s). A step's CPU seconds are what other processes on shared cores do not inflate: with
    one torch thread, about its seconds on a core of its own."""

    def __init__(self, log_path: Path, root: int):
        super().__init__(daemon=True)
        self.log_path, self.root, self.done = Path(log_path), root, threading.Event()
        self.marks: dict[int, float] = {}

    def _job_cpu(self) -> float | None:
        import psutil

        try:
            jobs = [p for p in psutil.Process(self.root).children(recursive=True)
                    if any("stage.py" in part for part in p.cmdline())]
            return sum(t.user + t.system for t in (p.cpu_times() for p in jobs)) if jobs else None
        except psutil.Error:
            return None

    def run(self) -> None:
        while not self.done.wait(0.1):
            steps = {p.done for p in progress(self.log_path, "train")} - set(self.marks)
            if steps:
                cpu = self._job_cpu()
                if cpu is not None:
                    self.marks.update({step: cpu for step in steps})

    def step_cpu_seconds(self) -> list[float]:
        """CPU seconds of each step after the first (the first also holds the trainer's start)."""
        ends = [self.marks[n] for n in sorted(self.marks)]
        return [round(b - a, 3) for a, b in zip(ends, ends[1:])]


def run_target(workdir: Path, config_path: Path, target: str, threads: int, train_log: Path | None = None) -> dict:
    """``snakemake TARGET`` as a user runs it (``threads`` cores, the train and index jobs given them
    all: one job at a time), with its wall seconds, the CPU seconds of its process tree (user +
    system) and their ratio (below ``threads`` x 1 where other processes took the cores), the peak
    resident set of the tree (the kernel's maximum over the waited-for processes: Snakemake and the
    job it ran) and the load average before and after."""
    cmd = [*SNAKEMAKE, "--cores", str(threads), "--set-threads", f"train={threads}", f"index={threads}", "-d", str(workdir),
           "--configfile", str(config_path), "--", target]
    load = os.getloadavg()
    start = time.perf_counter()
    with open(workdir / "snakemake.log", "a", encoding="utf-8") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        clock = StepClock(train_log, proc.pid) if train_log else None
        if clock:
            clock.start()
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if clock:
        clock.done.set()
        clock.join()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"real_size_smoke: snakemake failed on {target}; see {workdir / 'snakemake.log'}")
    cpu = usage.ru_utime + usage.ru_stime
    return {"wall_seconds": round(wall, 2), "cpu_seconds": round(cpu, 2), "cpu_share": round(cpu / wall, 3),
            "peak_rss_gib": round(usage.ru_maxrss / 2**20, 3),
            "load_before": [round(x, 2) for x in load], "load_after": [round(x, 2) for x in os.getloadavg()],
            **({"step_cpu_seconds": clock.step_cpu_seconds()} if clock else {})}


def progress(log_path: Path, what: str) -> list:
    """The progress lines of one job's log whose subject starts with ``what``."""
    from lsrbench.progress import parse_progress

    lines = log_path.read_text(encoding="utf-8").splitlines() if log_path.is_file() else []
    return [p for p in map(parse_progress, lines) if p is not None and p.what.startswith(what)]


def train_steps(log_path: Path) -> dict:
    """Seconds of each training step from the train job's progress lines (the trainer's start to the
    end of step n is n / rate): the first step carries the warm-up (allocations, the first kernels)."""
    lines = {p.done: p.done / p.rate for p in progress(log_path, "train") if p.rate}
    ends = [lines[n] for n in sorted(lines)]
    steps = [round(b - a, 3) for a, b in zip([0.0, *ends], ends)]
    return {"step_seconds": steps, "steady_step_seconds": steps[-1] if len(steps) > 1 else None}


def folder_bytes(path: Path) -> int:
    path = Path(path)
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else path.stat().st_size


def matmul_peak(threads: int, sizes=(1024, 2048), repeats: int = 3) -> float:
    """Best fp32 ``torch.mm`` GFLOP/s of square products at ``threads`` threads (this CPU's peak as
    these jobs can reach it)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    best = 0.0
    try:
        for n in sizes:
            a, b = torch.randn(n, n), torch.randn(n, n)
            torch.mm(a, b)
            for _ in range(repeats):
                start = time.perf_counter()
                torch.mm(a, b)
                best = max(best, 2 * n**3 / (time.perf_counter() - start) / 1e9)
    finally:
        torch.set_num_threads(before)
    return round(best, 1)


def train_at(workdir: Path, config_path: Path, backbone: str, folder: Path, batch: int, recipe: dict, threads: int) -> dict:
    """One training of ``steps`` steps at ``batch`` triplets: its job's measures, step seconds, FLOPs."""
    item = targets(config_path, backbone)["train"]
    print(f"real_size_smoke: {backbone} train at batch {batch} ...", flush=True)
    measured = run_target(workdir, config_path, item.path("status.json"), threads, workdir / item.path("train.log"))
    run = workdir / item.folder
    measured.update(output_bytes=folder_bytes(run), **train_steps(run / "train.log"),
                    provenance_seconds=json.loads((run / "train_provenance.json").read_text())["summary"]["seconds"])
    from lsrbench.index import roofline

    measured["step_flops"] = roofline.train_step_flops(str(folder), batch, recipe["query_max_length"],
                                                        recipe["document_max_length"])
    steady = measured["steady_step_seconds"]
    measured["achieved_gflops"] = round(measured["step_flops"] / steady / 1e9, 1) if steady else None
    cpu_steps = measured["step_cpu_seconds"]
    measured["steady_step_cpu_seconds"] = cpu_steps[-1] if cpu_steps else None
    measured["achieved_gflops_per_cpu_second"] = (round(measured["step_flops"] / cpu_steps[-1] / 1e9, 1)
                                                  if cpu_steps else None)
    print(f"real_size_smoke: {backbone} train at batch {batch}: {measured}", flush=True)
    return measured


def smoke_family(backbone: str, model: str, tmp: Path, paper: dict, args) -> dict:
    """Build one family's checkpoint and run its stages one target at a time (a training per batch
    size of ``args.batches``); its record."""
    folder = tmp / "models" / backbone
    built = build_checkpoint(model, folder)
    n = args.steps * max(args.batches)
    configs = {b: smoke_config(tmp, backbone, folder, paper, args.steps, b, n) for b in args.batches}
    first = configs[args.batches[0]]
    workdir = tmp / "work"
    workdir.mkdir(exist_ok=True)
    items = targets(first, backbone)
    record = {**built, "backbone": backbone, "checkpoint_bytes": folder_bytes(folder), "stages": {}}
    run_target(workdir, first, items["triplets"].path("triplets.jsonl"), args.threads)  # data: not timed
    recipe = {**paper["recipe"], "steps": args.steps}
    for stage, _, output in STAGES:
        if stage == "train":
            trains = {b: train_at(workdir, configs[b], backbone, folder, b, recipe, args.threads) for b in args.batches}
            record["stages"]["train"] = {"batches": trains, "paper_batch": at_paper_batch(trains, paper["recipe"]["batch_size"])}
            continue
        item = items[stage]
        print(f"real_size_smoke: {backbone} {stage} ...", flush=True)
        measured = run_target(workdir, first, item.path(output), args.threads)
        measured["output_bytes"] = folder_bytes(workdir / item.folder)
        record["stages"][stage] = measured
        print(f"real_size_smoke: {backbone} {stage}: {measured}", flush=True)
    index_dir = workdir / items["index"].folder
    docs = progress(index_dir / "index.log", "index")
    record["stages"]["index"]["documents_per_second"] = next((p.rate for p in reversed(docs) if "documents" in p.what), None)
    from lsrbench.index import roofline

    record["stages"]["index"]["document_flops"] = roofline.forward_flops(str(folder), 256)["total"]
    norms = json.loads((workdir / items["norm"].path("norms.json")).read_text())
    record["head"] = {k: norms[k] for k in ("frobenius_norm", "mean_row_norm", "vocab_size", "hidden_size", "tied")}
    record["metrics_tsv"] = (workdir / items["evaluate"].path("metrics.tsv")).read_text().splitlines()
    return record


def main(argv=None) -> int:
    import yaml

    from lsrbench.index.roofline import BACKBONE_SHAPES as PAPER_MODELS
    from lsrbench.model.public_configs import PUBLIC_CONFIGS

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--families", default=None, help="comma-separated backbones of config/paper.yaml (default: all "
                                                     "whose published config is known)")
    ap.add_argument("--batches", default="2,4", help="training batch sizes (triplets) to run; the paper's (32) is "
                                                     "extrapolated from them when it is not among them")
    ap.add_argument("--docs", type=int, default=128, help="documents of the smoke collection (index, evaluate): one "
                    "encode batch of the paper's 128")
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--steps", type=int, default=2, help="training steps per batch size")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of the train and index jobs (a local job's: 1)")
    ap.add_argument("--keep", default=None, help="work in this folder and keep it (default: a temporary one)")
    ap.add_argument("--resume", action="store_true", help="keep the families already in the result file (a run "
                    "cut short) and run only the others; each run's command, commit and families go to ``runs``")
    ap.add_argument("--name", default=None, help="the record's name under results/ (default: real_size_smoke; "
                    "two runs on other families side by side: each its own, then --merge)")
    ap.add_argument("--merge", nargs="+", metavar="NAME", help="merge these records of the same settings into --name's "
                    "(each family from the record that has it) and exit")
    ap.add_argument("--quick", action="store_true", help="ALBERT only, batches 2 and 4, 48 documents: "
                                                         "results/real_size_smoke-quick.json")
    args = ap.parse_args(argv)
    args.batches = sorted({int(b) for b in ("2,4" if args.quick else args.batches).split(",")})
    paper = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    wanted = args.families.split(",") if args.families else ["albert"] if args.quick else list(PAPER_MODELS)
    if args.quick:
        args.docs = min(args.docs, 48)
    name = args.name or ("real_size_smoke-quick" if args.quick else "real_size_smoke")
    if args.merge:
        return merge_records(name, args.merge)
    result = {"benchmark": "real_size_smoke", "command": command_line(), "machine": machine_info(),
              "threads": args.threads, "steps": args.steps, "batches": args.batches, "recipe": paper["recipe"],
              "evaluation": {k: paper["evaluation"][k] for k in ("encode_batch_size", "document_max_length",
                                                                 "query_max_length", "top_k")},
              "matmul_peak_gflops": {"start": matmul_peak(args.threads)}, "families": {}, "skipped": {}}
    why = None if args.quick else not_one_clean_commit([result["machine"].get("git")])
    if why:  # the record is what one clean commit measures (--quick is a developer's check, its own file)
        print(f"real_size_smoke: error: {why}: commit or stash first; the whole record is one command on one "
              "clean commit", file=sys.stderr)
        return 2
    result["runs"] = resumed_runs(name, result) if args.resume else []
    result["runs"].append({"command": result["command"], "git": result["machine"].get("git"),
                           "matmul_peak_gflops": result["matmul_peak_gflops"], "families": []})
    with tempfile.TemporaryDirectory(prefix="lsrbench-smoke-") as scratch:
        tmp = Path(args.keep or scratch)
        tmp.mkdir(parents=True, exist_ok=True)
        result["collection"] = smoke_collection(tmp / "data" / SLICE, args.docs, args.queries)
        result["training_collection"] = smoke_collection(tmp / "data" / TRAIN, None, args.queries)
        (tmp / "datasets.yaml").write_text(yaml.safe_dump({n: {"source": "beir", "path": str(tmp / "data" / n)}
                                                           for n in (SLICE, TRAIN)}))
        for backbone in wanted:
            model = PAPER_MODELS[backbone]
            if model not in PUBLIC_CONFIGS:
                result["skipped"][backbone] = f"{model}: no published config in lsrbench.model.public_configs"
                continue
            if model in result["families"]:
                continue
            result["families"][model] = smoke_family(backbone, model, tmp, paper, args)
            result["runs"][-1]["families"].append(model)
            write_result(name, annotate(result))  # after each family: a long run keeps what it measured
    result["matmul_peak_gflops"]["end"] = matmul_peak(args.threads)
    print(f"real_size_smoke: wrote {write_result(name, annotate(result))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
