"""Fixtures shared by every test module; helpers (plain functions) are in ``tests/helpers/``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers.beir import write_beir
from helpers.paths import shared_or_skip
from helpers.session import built_once, session_root
from helpers.skips import ENV, allowance, skip_reason
from helpers.snakemake import micro_config, micro_config_path, run_snakemake

_SKIPS: list[tuple[str, str]] = []  # (test or module, reason) of every skip this session saw


def pytest_runtest_logreport(report):
    if report.skipped and not hasattr(report, "wasxfail"):
        _SKIPS.append((report.nodeid, skip_reason(report)))


def pytest_collectreport(report):
    if report.skipped:
        _SKIPS.append((report.nodeid, skip_reason(report)))


def _unexpected() -> list[tuple[str, str]]:
    return [(node, reason) for node, reason in _SKIPS if allowance(reason) is None]


def pytest_terminal_summary(terminalreporter):
    """The skips this session allowed (helpers/skips.py names why), and any it did not."""
    if not _SKIPS or hasattr(terminalreporter.config, "workerinput"):
        return
    allowed: dict[str, int] = {}
    for _, reason in _SKIPS:
        if allowance(reason):
            allowed[allowance(reason)] = allowed.get(allowance(reason), 0) + 1
    for name, count in allowed.items():
        terminalreporter.write_line(f"allowed skip ({count}): {name}")
    for node, reason in _unexpected():
        terminalreporter.write_line(f"unexpected skip: {node}: {reason}" + (" (fails the session: " + ENV + ")"
                                                                             if os.environ.get(ENV) else ""))


def pytest_sessionfinish(session, exitstatus):
    """With LSRBENCH_ALLOWED_SKIPS_ONLY=1 (CI), a skip the suite does not allow fails the session."""
    if os.environ.get(ENV) and not hasattr(session.config, "workerinput") and _unexpected():
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# pytest-xdist (--dist loadscope) hands whole modules to its workers in this order, two each at the
# start (--no-loadscope-reorder: not by its count of tests, which put these last). First the slow
# suite's longest module, which needs no finished micro run (gpu.sh --quick, ~240 s in CI): it runs
# while the other worker builds that run (the catalogue) instead of waiting for it; then the fast
# suite's longest (the paper grid's dry run, ~2,600 jobs: 65 % of tests/dag + tests/ops with -n 0),
# and the modules that train a micro DAG of their own: no long module is left for the end while a
# worker idles.
FIRST = ("tests/test_benchmark_gpu.py", "tests/dag/test_bad_inputs_dag.py", "tests/ops/test_plan.py",
         "tests/dag/test_faults_dag.py",
         "tests/dag/test_determinism.py", "tests/dag/test_mlm_refit_dag.py", "tests/dag/test_probe_dag.py",
         "tests/dag/test_head_match_dag.py", "tests/dag/test_resume_dag.py", "tests/ops/test_status_dag.py")


@pytest.hookimpl(trylast=True)  # after -m has deselected: the counts are of the tests that run
def pytest_collection_modifyitems(config, items):
    """:data:`FIRST` in its order, then the other modules by their number of tests (pytest-xdist's own order)."""
    rank = {module: i for i, module in enumerate(FIRST)}
    counts: dict[str, int] = {}
    for item in items:
        counts[_module(item)] = counts.get(_module(item), 0) + 1
    items.sort(key=lambda item: (rank.get(_module(item), len(FIRST)), -counts[_module(item)]))  # stable


def _module(item) -> str:
    return item.nodeid.split("::")[0]


def pytest_configure(config):
    """Under pytest-xdist, each worker's torch gets its share of the cores (two workers with two
    threads each would contend for two cores)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
    if workers > 1:
        import torch

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))


@pytest.fixture(scope="session", autouse=True)
def checked_inputs_record(tmp_path_factory):
    """One record of the dataset and checkpoint folders that passed the Snakefile's checks for the
    whole session (``LSRBENCH_CHECKED_INPUTS``, :mod:`lsrbench.validation.files`), inherited by
    every Snakemake the tests start: the tests' many fresh working directories check an unchanged
    folder (the shared SPLADE-tiny, the session's random RoBERTa) once, not in each dry run. A
    folder a test makes or changes is checked as before."""
    from lsrbench.validation.files import RECORD_VARIABLE

    path = session_root(tmp_path_factory) / "checked-inputs.json"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(RECORD_VARIABLE, str(path))
        yield path


@pytest.fixture(scope="session", autouse=True)
def no_slurm_controller(request):
    """Every snakemake the tests start waits for no SLURM controller, as lsrbench's own starts
    (:mod:`lsrbench.snakemake_env`); a session that may run the SLURM tests (-m slurm) keeps its
    environment (their cluster's client config)."""
    from lsrbench.snakemake_env import NO_CONTROLLER

    markexpr = request.config.getoption("markexpr") or ""
    if "slurm" in markexpr and "not slurm" not in markexpr:
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        for name, value in NO_CONTROLLER.items():
            patch.setenv(name, value)
        yield


@pytest.fixture(scope="session")
def vaswani_slice(tmp_path_factory) -> Path:
    """A small real slice of Vaswani: 20 queries, their judged documents plus 200 others."""
    src = shared_or_skip("data", "vaswani")

    def build(folder: Path) -> None:
        from lsrbench.data.beir import load_beir_folder

        ds = load_beir_folder(src)
        qids = list(ds.queries)[:20]
        judged = {d for q in qids for d in ds.qrels[q]}
        keep = [d for d in ds.corpus if d in judged]
        keep += [d for d in ds.corpus if d not in judged][:200]
        keep = set(keep)
        corpus = {d: t for d, t in ds.corpus.items() if d in keep}
        qrels = [(q, d, s) for q in qids for d, s in ds.qrels[q].items()]
        write_beir(folder, corpus, {q: ds.queries[q] for q in qids}, qrels)

    return built_once(tmp_path_factory, "vaswani_slice", build)


@pytest.fixture(scope="session")
def tiny_roberta(tmp_path_factory, vaswani_slice) -> Path:
    """A randomly initialised 1-layer RobertaForMaskedLM (a non-BERT family) with a byte-level BPE
    tokenizer trained on the slice: tied head, vocab ~600."""
    return built_once(tmp_path_factory, "tiny_roberta", lambda out: _write_tiny_roberta(out, vaswani_slice))


def _write_tiny_roberta(out: Path, vaswani_slice: Path) -> None:
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast, RobertaConfig, RobertaForMaskedLM

    texts = [json.loads(line)["text"] for line in open(vaswani_slice / "corpus.jsonl")]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=600, min_frequency=2, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                  pad_token="<pad>", mask_token="<mask>", cls_token="<s>", sep_token="</s>")
    tok.model_max_length = 128
    tok.save_pretrained(out)
    torch.manual_seed(0)
    cfg = RobertaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=160, pad_token_id=tok.pad_token_id,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, tie_word_embeddings=True)
    RobertaForMaskedLM(cfg).save_pretrained(out)


@pytest.fixture(scope="session")
def micro_run(tmp_path_factory, vaswani_slice, tiny_roberta) -> dict:
    """One finished micro run of the whole DAG (:mod:`helpers.snakemake`), shared by the
    reliability tests: ``{"work": workdir, "results": workdir/results, "config": config path}``;
    once per session, whatever the number of pytest-xdist workers."""
    def build(tmp: Path) -> None:
        cfg = micro_config(tmp, vaswani_slice, tiny_roberta)
        (tmp / "work").mkdir()
        run_snakemake("--cores", "2", "-d", str(tmp / "work"), "--configfile", str(cfg))

    tmp = built_once(tmp_path_factory, "micro_run", build)
    return {"work": tmp / "work", "results": tmp / "work" / "results", "config": micro_config_path(tmp)}
