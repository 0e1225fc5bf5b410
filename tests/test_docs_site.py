"""The documentation site builds with warnings as errors, and its links, images and API pages are all there.

Needs the ``docs`` extra (``pip install -e ".[docs]"``); skipped without it.
"""

from __future__ import annotations

import contextlib
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


# --- the site in a real browser ----------------------------------------------------------
# Headless Chromium (Debian's chromium and chromium-driver, driven by selenium from the docs
# extra) opens three pages of the build over a localhost server, saves a screenshot of each
# and checks that it rendered: the page finished loading, the theme's stylesheet applied,
# every image decoded, no console error from the site itself, and a screenshot that is not
# blank. `.ci/run` installs the browser and sets SGPVERIFY_REQUIRE_BROWSER=1, so there a
# missing browser fails instead of skipping; SGPVERIFY_SCREENSHOTS=DIR keeps the screenshots.
# The machine is offline: resources from other hosts (MathJax from its CDN) cannot load, so
# their failures are reported apart and do not fail the test; every local failure does.

BROWSER_PAGES = {
    "landing": "index.html",
    "api": "api/generated/sgpverify.plots.plot_trace.html",
    "gallery": "auto_examples/plot_trace_example.html",
}
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,1400",
)


def _missing_browser(why: str):
    if os.environ.get("SGPVERIFY_REQUIRE_BROWSER") == "1":
        pytest.fail(f"SGPVERIFY_REQUIRE_BROWSER=1 but {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    import shutil

    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _missing_browser("selenium is not installed (the docs extra)")
    chromium = os.environ.get("SGPVERIFY_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if not chromium or not driver_path:
        _missing_browser("no chromium and chromedriver on PATH (Debian: apt-get install chromium chromium-driver)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=opts)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def served(site):
    """The built site on a localhost HTTP server: ``(base_url, log of (path, status))``."""
    with _serve(site) as served:
        yield served


@contextlib.contextmanager
def _serve(directory: Path):
    import functools
    import http.server
    import threading

    log: list[tuple[str, int]] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_request(self, code="-", size="-"):
            log.append((urlsplit(self.path).path, int(getattr(code, "value", code))))

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(directory)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", log
    finally:
        server.shutdown()
        server.server_close()


def _nonblank_fraction(png: Path) -> float:
    """The fraction of the screenshot's pixels that differ from its most common colour."""
    import matplotlib.image
    import numpy as np

    rgb = (matplotlib.image.imread(png)[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
    _, counts = np.unique(rgb, axis=0, return_counts=True)
    return 1.0 - counts.max() / rgb.shape[0]


def render_problems(driver, url: str, shot: Path, *, themed: bool = True) -> tuple[list[str], list[str]]:
    """Open ``url``, save a screenshot to ``shot`` and say what did not render.

    Returns ``(problems, offline)``: ``problems`` fail the page (not loaded, the theme's
    stylesheet not applied, an image that did not decode, a console error from the page's own
    host, a blank screenshot); ``offline`` are failed loads from other hosts.
    """
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url)
    settled = "return document.readyState === 'complete' && Array.from(document.images).every(i => i.complete)"
    problems: list[str] = []
    try:
        WebDriverWait(driver, 30).until(lambda d: d.execute_script(settled))
    except Exception:  # selenium's TimeoutException; the state is reported below
        problems.append("the page did not finish loading in 30 s")
    images = driver.execute_script(
        "return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth])"
    )
    problems += [f"image {src} did not load" for src, complete, width in images if not (complete and width > 0)]
    if themed:
        header = driver.execute_script(
            "const h = document.querySelector('.bd-header');"
            "return h ? [getComputedStyle(h).position, h.getBoundingClientRect().height] : null"
        )
        if not header or header[0] not in ("sticky", "fixed") or header[1] <= 0:
            problems.append(f"the theme's stylesheet did not apply (header {header})")
    host = urlsplit(url).netloc
    offline = []
    for entry in driver.get_log("browser"):
        if entry["level"] != "SEVERE":
            continue
        source = entry["message"].split(" ", 1)[0]
        if urlsplit(source).netloc not in ("", host):
            offline.append(entry["message"])
        else:
            problems.append(f"console error: {entry['message']}")
    shot.parent.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(shot))
    filled = _nonblank_fraction(shot)
    if filled < 0.02:
        problems.append(f"the screenshot is blank ({filled:.2%} of pixels differ from the background)")
    return problems, offline


@pytest.fixture(scope="module")
def shots_dir(tmp_path_factory) -> Path:
    keep = os.environ.get("SGPVERIFY_SCREENSHOTS")
    return Path(keep) if keep else tmp_path_factory.mktemp("screenshots")


@pytest.mark.parametrize("name", sorted(BROWSER_PAGES))
def test_page_renders_in_chromium(browser, served, shots_dir, name):
    base, log = served
    page = BROWSER_PAGES[name]
    problems, offline = render_problems(browser, f"{base}/{page}", shots_dir / f"{name}.png")
    assert not problems, f"{page}:\n" + "\n".join(problems)
    # the offline failures are the CDN's MathJax, nothing else: any other remote resource is news
    assert all("mathjax" in m.lower() for m in offline), offline
    assert (f"/{page}", 200) in log
    if name in ("landing", "gallery"):
        n_images = browser.execute_script("return document.images.length")
        assert n_images >= 1, f"{page} shows no figure"


def test_render_check_sees_a_broken_page(browser, tmp_path, shots_dir):
    """The control of the rendering test: a missing image, a console error, an unstyled and
    a blank page are each reported."""
    (tmp_path / "broken.html").write_text(
        "<html><body><h1>broken</h1><p>" + "text " * 400 + "</p><img src='missing.png'>"
        "<script>console.error('planted error')</script></body></html>"
    )
    (tmp_path / "blank.html").write_text("<html><body></body></html>")
    with _serve(tmp_path) as (base, _):
        problems, _ = render_problems(browser, f"{base}/broken.html", shots_dir / "control-broken.png")
        text = "\n".join(problems)
        assert "image missing.png did not load" in text
        assert "planted error" in text
        assert "stylesheet did not apply" in text
        problems, _ = render_problems(browser, f"{base}/blank.html", shots_dir / "control-blank.png", themed=False)
        assert any("blank" in p for p in problems), problems
