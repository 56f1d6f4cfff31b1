"""BEIR's public zips: downloaded once, checked against ir_datasets' published MD5 (zips have been replaced
upstream before), unpacked safely, read as a BEIR folder."""

from __future__ import annotations

import hashlib
import os
import shutil
import urllib.error
import urllib.request
import zipfile
from pathlib import Path, PurePosixPath

from lsrbench.atomic import atomic_dir, atomic_open
from lsrbench.data.beir import Dataset, load_beir_folder
from lsrbench.downloads import FetchFailed, network_reason
from lsrbench.errors import InputError
from lsrbench.names import SAFE_NAME

__all__ = ["BEIR_URL", "check_md5", "extract_beir_zip", "load_beir_download"]

BEIR_URL = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/{name}.zip"


def extract_beir_zip(zip_path: str | os.PathLike, out_dir: str | os.PathLike) -> Path:
    """Unpack a BEIR zip (one top folder, or files at the root) so ``out_dir`` appears atomically as the dataset
    folder."""
    zip_path, out_dir = Path(zip_path), Path(out_dir)
    try:
        zf = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError) as e:
        raise InputError(zip_path, None, f"not a readable zip archive ({e})") from None
    with zf:
        for info in zf.infolist():
            parts = PurePosixPath(info.filename.replace("\\", "/")).parts
            if info.filename.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
                raise InputError(zip_path, info.filename, "unsafe path in archive")
        with atomic_dir(out_dir) as tmp:
            zf.extractall(tmp)
            shutil.rmtree(tmp / "__MACOSX", ignore_errors=True)
            if not (tmp / "corpus.jsonl").is_file():
                children = [c for c in tmp.iterdir()]
                if len(children) != 1 or not (children[0] / "corpus.jsonl").is_file():
                    raise InputError(zip_path, None,
                                     "archive has no corpus.jsonl at its root or in a single top-level folder")
                inner = children[0].rename(tmp / ".beir-inner")
                for item in inner.iterdir():
                    item.rename(tmp / item.name)
                inner.rmdir()
    return out_dir


def _download(name: str, url: str, dest: Path) -> None:
    what = f"BEIR's zip of '{name}'"
    try:
        with urllib.request.urlopen(url, timeout=60) as response, atomic_open(dest, "wb") as fh:
            shutil.copyfileobj(response, fh, length=1 << 20)
    except urllib.error.HTTPError as e:
        raise FetchFailed(url, None, what, url, f"HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError) as e:
        raise FetchFailed(url, None, what, url, network_reason(e) or str(getattr(e, "reason", e))) from None


def md5_file(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_md5(name: str, zip_path: Path, expected: str | None) -> None:
    """Refuse a zip whose MD5 is not ``expected`` in one line naming both digests; the zip is set aside as
    ``<zip>.rejected``."""
    if expected is None:
        return
    found = md5_file(zip_path)
    if found != expected.lower():
        rejected = zip_path.with_name(zip_path.name + ".rejected")
        zip_path.replace(rejected)
        raise InputError(rejected, None, f"BEIR dataset '{name}': zip MD5 {found}, expected {expected} (the archive "
                                         "changed upstream or the download is damaged); not unpacked")


def load_beir_download(name: str, cache_dir: str | os.PathLike, split: str = "test", *,
                       unknown_docs: str = "error", empty_queries: str = "error", md5: str | None = None) -> Dataset:
    """Fetch, check and unzip BEIR's zip for ``name`` into ``<cache_dir>/<name>/`` (reused when there) and load
    it."""
    if not SAFE_NAME.match(name or ""):
        raise InputError(BEIR_URL.format(name=name), None, f"'{name}' is not a valid BEIR dataset name")
    cache_dir = Path(cache_dir)
    folder = cache_dir / name
    if not (folder / "corpus.jsonl").is_file():
        zip_path = cache_dir / f"{name}.zip"
        if not zip_path.is_file():
            _download(name, BEIR_URL.format(name=name), zip_path)
        check_md5(name, zip_path, md5)
        extract_beir_zip(zip_path, folder)
        zip_path.unlink()
    return load_beir_folder(folder, split=split, name=name, unknown_docs=unknown_docs, empty_queries=empty_queries)
