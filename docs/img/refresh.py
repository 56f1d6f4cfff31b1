"""The documentation's images, made by the pipeline: ``tradeoff.png`` is the tiny default's
``results/tradeoff.png``, ``report.png`` the first screen of its HTML report (``results/report.html``,
``snakemake --cores 1 --report results/report.html``) as headless Chromium shows it at 1400x1000. ``sources.json`` beside them records the SHA-256 of the result
files each was made from, so that CI (``.ci/run``, after the tiny default) can tell when an image no
longer shows what the pipeline makes.

    snakemake --cores 1 --report results/report.html --config mirror=../shared
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
# (the report's landing shows the config's runs and the tradeoff figure: metrics.csv's data)
MADE_FROM = {"tradeoff.png": ["metrics.csv"], "report.png": ["metrics.csv"]}  # their data, not the drawing's bytes
WINDOW = "1400,1000"  # the screen the HTML report test opens it on (tests/helpers/chromium.py)


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
                        "--virtual-time-budget=10000",  # the report is a script-built page: let it finish
                        f"--screenshot={out}", page.resolve().as_uri()], check=True, capture_output=True, timeout=120)


def refresh(results: Path) -> None:
    if not (results / "report.html").is_file():
        sys.exit(f"refresh: no {results}/report.html: snakemake --cores 1 --report {results}/report.html first")
    shutil.copyfile(results / "tradeoff.png", HERE / "tradeoff.png")
    _screenshot(results / "report.html", HERE / "report.png")
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
