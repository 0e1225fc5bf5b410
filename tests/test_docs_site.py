"""The documentation site builds with warnings as errors, and its links, images and API pages are all there.

Needs the ``docs`` extra (``pip install -e ".[docs]"``); skipped without it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

for _module in ("sphinx", "pydata_sphinx_theme", "numpydoc", "myst_parser", "sphinx_gallery", "matplotlib"):
    pytest.importorskip(_module)

import sgpverify  # noqa: E402

DOCS = Path(__file__).resolve().parent.parent / "docs"


class _Page(HTMLParser):
    """The ids, link targets and image sources of one HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self.srcs: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id", "name"):
            if a.get(key):
                self.ids.add(a[key])
        if tag == "a" and a.get("href") is not None:
            self.hrefs.append(a["href"])
        if tag == "img" and a.get("src"):
            self.srcs.append(a["src"])


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _internal(url: str) -> bool:
    parts = urlsplit(url)
    return not parts.scheme and not parts.netloc and url not in ("", "#")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    html = out / "html"
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
    cmd += ["-d", str(out / "doctrees"), str(DOCS), str(html)]
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, f"sphinx -W failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
    return html


def test_links_and_anchors_resolve(site):
    pages = {p: _parse(p) for p in site.rglob("*.html")}
    assert site / "index.html" in pages
    broken = []
    for path, page in pages.items():
        for url in page.hrefs:
            if not _internal(url):
                continue
            parts = urlsplit(url)
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{path.relative_to(site)}: {url} (no file)")
                continue
            if parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{path.relative_to(site)}: {url} (no id {parts.fragment!r})")
    assert not broken, "broken internal links:\n" + "\n".join(broken[:50])


def test_images_resolve(site):
    missing = []
    n_images = 0
    for path in site.rglob("*.html"):
        for src in _parse(path).srcs:
            if not _internal(src):
                continue
            n_images += 1
            if not (path.parent / unquote(urlsplit(src).path)).is_file():
                missing.append(f"{path.relative_to(site)}: {src}")
    assert not missing, "missing images:\n" + "\n".join(missing)
    assert n_images > 0


def test_every_public_name_has_an_api_page(site):
    api = site / "api" / "generated"
    listed = set(_parse(api / "sgpverify.html").hrefs)
    for name in sgpverify.__all__:
        page = f"sgpverify.{name}.html"
        assert (api / page).is_file(), f"no API page for sgpverify.{name}"
        assert page in listed, f"sgpverify.{name} is not listed on the API page of sgpverify"


def test_site_sections(site):
    for page in ("guide", "theory", "constants", "benchmarks", "contributing", "claims", "api"):
        assert (site / f"{page}.html").is_file(), page
    gallery = list((site / "auto_examples").glob("*.html"))
    assert len(gallery) >= 4  # the index and the examples
    claims = (site / "claims.html").read_text(encoding="utf-8")
    from sgpverify.suite import CLAIMS

    for claim in CLAIMS:
        assert claim.name in claims
