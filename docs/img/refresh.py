"""The documentation's images, made by the pipeline: ``tradeoff.png`` is the tiny default's
``results/tradeoff.png``, ``report.png`` the tiny default's Table 1 page (``results/html/table1.html``)
as headless Chromium renders it. ``sources.json`` beside them records the SHA-256 of the result
files each was made from, so that CI (``.ci/run``, after the tiny default) can tell when an image no
longer shows what the pipeline makes.

    python docs/img/refresh.py [RESULTS]            # remake the images from a finished tiny default
    python docs/img/refresh.py --check [RESULTS]    # exit 1, naming the image, when one is stale
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "sources.json"
# image -> the result files it shows (relative to the results folder)
MADE_FROM = {"tradeoff.png": ["metrics.csv"], "report.png": ["table1.md"]}  # their data, not the drawing's bytes
WINDOW = "1000,520"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _record(results: Path) -> dict:
    return {image: {name: _sha256(results / name) for name in files} for image, files in MADE_FROM.items()}


def _screenshot(page: Path, out: Path) -> None:
    binary = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if binary is None:
        sys.exit("refresh: chromium not found (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        "--hide-scrollbars", f"--user-data-dir={profile}", f"--window-size={WINDOW}",
                        f"--screenshot={out}", page.resolve().as_uri()], check=True, capture_output=True, timeout=120)


def refresh(results: Path) -> None:
    shutil.copyfile(results / "tradeoff.png", HERE / "tradeoff.png")
    _screenshot(results / "html" / "table1.html", HERE / "report.png")
    SOURCES.write_text(json.dumps(_record(results), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"refresh: {', '.join(MADE_FROM)} made from {results}")


def check(results: Path) -> int:
    recorded = json.loads(SOURCES.read_text(encoding="utf-8"))
    stale = [image for image, files in _record(results).items() if recorded.get(image) != files]
    for image in stale:
        print(f"docs/img/{image}: made from other results than {results}/{', '.join(MADE_FROM[image])}: "
              f"run python docs/img/refresh.py {results}", file=sys.stderr)
    return 1 if stale else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", default="results", type=Path)
    parser.add_argument("--check", action="store_true", help="only say whether the images are current")
    args = parser.parse_args(argv)
    if args.check:
        return check(args.results)
    refresh(args.results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
