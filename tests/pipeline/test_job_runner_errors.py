"""A job that the operating system stops writing (issue 22 item 7): a full disk (ENOSPC) or a spent
quota (EDQUOT) during an atomic write is one line naming the job's output folder, exit status 1,
and no file under its final name. Run in-process through the job runner, with the write's failure
injected where the kernel would report it (a test cannot fill a disk: mounting a small tmpfs needs
root and a mount namespace); through snakemake: tests/dag/test_bad_inputs_dag.py."""

from __future__ import annotations

import errno
import os
from types import SimpleNamespace

import pytest

from lsrbench.atomic import atomic_open
from lsrbench.pipeline import job_runner


class _Files(dict):
    """Snakemake's named input/output lists: ``items()`` and iteration over the paths."""

    def __iter__(self):
        return iter(self.values())


def _job(tmp_path, outputs: dict):
    params = SimpleNamespace(stage="fake_write", settings={}, runtime=None, keyed=None, identity={})
    return SimpleNamespace(params=params, input=_Files(), output=_Files(outputs), log=[], threads=1,
                           resources=SimpleNamespace(gpu=0))


@pytest.fixture
def job(monkeypatch, tmp_path):
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.setenv(var, os.environ.get(var, "1"))  # the job runner sets them: restored after

    def fake_write(metrics_tsv: str, run_trec: str):
        with atomic_open(run_trec) as fh:
            fh.write("q1 Q0 d1 1 1.0 t\n")
        with atomic_open(metrics_tsv) as fh:
            fh.write("measure\tvalue\n")
    real = job_runner.job_function
    monkeypatch.setattr(job_runner, "job_function", lambda name: fake_write if name == "fake_write" else real(name))
    folder = tmp_path / "results" / "eval" / "abc123"
    return folder, _job(tmp_path, {"metrics_tsv": str(folder / "metrics.tsv"), "run_trec": str(folder / "run.trec")})


@pytest.mark.parametrize("code, says", [(errno.ENOSPC, "no space left on device"), (errno.EDQUOT, "disk quota exceeded")])
def test_a_full_disk_in_a_job_is_one_line_naming_its_folder(job, monkeypatch, capsys, code, says):
    folder, snakemake = job
    real_replace = os.replace

    def full(src, dst):
        if str(dst).endswith("metrics.tsv"):  # the second output: the first is already in place
            raise OSError(code, os.strerror(code))  # as write() reports it: no file name
        real_replace(src, dst)
    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(SystemExit) as exited:
        job_runner.run(snakemake)
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [f"lsrbench: error: {folder}: {says} writing it (nothing finished was changed: "
                                "outputs appear only once whole); free space and run again"], err
    assert sorted(p.name for p in folder.iterdir()) == ["run.trec"]  # no temporary, no partial metrics.tsv


def test_another_os_error_still_raises(job, monkeypatch):
    """Only a full disk or quota is turned into a line here: any other OSError is a bug to see whole."""
    _, snakemake = job

    def broken(src, dst):
        raise OSError(errno.EIO, os.strerror(errno.EIO))
    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError):
        job_runner.run(snakemake)

