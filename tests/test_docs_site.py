"""The documentation site builds with warnings as errors, and its links, images and API pages are all there.

Needs the ``docs`` extra (``pip install -e ".[docs]"``); skipped without it.
"""

from __future__ import annotations

import contextlib
import functools
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


@functools.cache
def _parse(path: Path) -> _Page:
    """One page's ids, links and images, parsed once (the link and the image tests read the same pages)."""
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
# The browser runs with the network off: every host name but the local server's resolves to
# nothing and every other connection goes to a dead local proxy, so the pages must bring all
# they need (MathJax included, from the built site's _static/mathjax/). A load from another
# host fails and fails the test. On the theory and tightness pages every formula must be
# typeset: no raw TeX (`$`, `\(`, `\[`) left in the text a reader sees, and no TeX error.

BROWSER_PAGES = {
    "landing": "index.html",
    "api": "api/generated/sgpverify.plots.plot_trace.html",
    "gallery": "auto_examples/plot_trace_example.html",
    "theory": "theory.html",
    "tightness": "tightness.html",
}
MATH_PAGES = ("theory", "tightness")
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
    # the network off: names other than the local server's do not resolve, and connections to
    # any other address go to a closed local port (loopback itself bypasses a proxy)
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--proxy-server=http://127.0.0.1:9",
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


def _pages(names):
    """``names`` as parameters, the tightness page in the slow run only (about 9 s with its math test):
    the theory page holds both rules by default."""
    return [pytest.param(p, marks=pytest.mark.slow) if p == "tightness" else p for p in names]


@pytest.mark.parametrize("name", _pages(sorted(BROWSER_PAGES)))
def test_page_renders_in_chromium(browser, served, shots_dir, name):
    base, log = served
    page = BROWSER_PAGES[name]
    problems, offline = render_problems(browser, f"{base}/{page}", shots_dir / f"{name}.png")
    assert not problems, f"{page}:\n" + "\n".join(problems)
    # the network is off: a page that reaches for another host does not work offline
    assert not offline, offline
    assert (f"/{page}", 200) in log
    if name in ("landing", "gallery"):
        n_images = browser.execute_script("return document.images.length")
        assert n_images >= 1, f"{page} shows no figure"


# the text a reader sees: the page's text without code, scripts and styles (where a `$` is
# literal), after MathJax has typeset the formulas (whose own text is then MathML, not TeX)
_READER_TEXT = """
const body = document.body.cloneNode(true);
body.querySelectorAll('pre, code, script, style, .highlight').forEach(e => e.remove());
return body.textContent;
"""
_TYPESET = """
const done = arguments[arguments.length - 1];
if (!window.MathJax || !MathJax.startup || !MathJax.startup.promise) { done('no MathJax'); return; }
MathJax.startup.promise.then(() => done('ok'), e => done('MathJax failed: ' + e));
"""
RAW_TEX = ("$", "\\(", "\\)", "\\[", "\\]")


def math_problems(driver) -> list[str]:
    """What did not typeset on the open page: MathJax missing or failed, a formula left as raw
    TeX in the text a reader sees, a TeX error, or fewer typeset formulas than math elements."""
    driver.set_script_timeout(60)
    state = driver.execute_async_script(_TYPESET)
    problems = [] if state == "ok" else [state]
    text = driver.execute_script(_READER_TEXT)
    for token in RAW_TEX:
        at = [i for i in range(len(text)) if text.startswith(token, i)]
        if at:
            where = " | ".join(repr(text[max(0, i - 50) : i + 50]) for i in at[:3])
            problems.append(f"raw TeX {token!r} in the text, {len(at)} times: {where}")
    counts = driver.execute_script(
        "const typeset = Array.from(document.querySelectorAll('.math mjx-container'));"
        "return [document.querySelectorAll('.math').length, typeset.length,"
        " document.querySelectorAll('mjx-merror, [data-mjx-error]').length,"
        # MathJax shows an undefined macro as its own name (in red), not as an error
        " typeset.filter(e => /\\\\[A-Za-z]/.test(e.textContent)).length]"
    )
    n_math, n_typeset, n_errors, n_undefined = counts
    if n_typeset < n_math:
        problems.append(f"{n_math - n_typeset} of {n_math} math elements not typeset")
    if n_errors:
        problems.append(f"{n_errors} TeX errors")
    if n_undefined:
        problems.append(f"{n_undefined} formulas with an undefined macro")
    return problems


@pytest.mark.parametrize("name", _pages(MATH_PAGES))
def test_math_renders_offline(browser, served, shots_dir, name):
    base, _ = served
    page = BROWSER_PAGES[name]
    problems, offline = render_problems(browser, f"{base}/{page}", shots_dir / f"math-{name}.png")
    assert not problems and not offline, f"{page}:\n" + "\n".join(problems + offline)
    n_math = browser.execute_script("return document.querySelectorAll('.math').length")
    assert n_math >= 10, f"{page} has {n_math} formulas"
    problems = math_problems(browser)
    assert not problems, f"{page}:\n" + "\n".join(problems)


@pytest.mark.slow  # 12 s: the control of the math test (which runs by default on the theory page)
def test_math_check_sees_raw_tex(browser, served, tmp_path, shots_dir):
    """The control of the math test: a page that never loads MathJax shows raw TeX, and on a
    page of the built site a TeX error and an undefined macro are each reported."""
    base, _ = served
    (tmp_path / "raw.html").write_text(
        "<html><body><p>" + "text " * 400 + "</p><p>We have $x$ and \\(f(x)\\), and</p>"
        "<div class='math'>\\[\\sum_i x_i\\]</div><pre>$ not math in code</pre></body></html>"
    )
    with _serve(tmp_path) as (local, _):
        render_problems(browser, f"{local}/raw.html", shots_dir / "control-raw.png", themed=False)
        text = "\n".join(math_problems(browser))
    assert "no MathJax" in text
    for token in RAW_TEX:
        assert f"raw TeX {token!r}" in text, (token, text)
    assert "1 of 1 math elements not typeset" in text
    assert "not math in code" not in text  # a `$` in code is literal, not a formula
    # a formula with a TeX error and one with an undefined macro, typeset by the site's own
    # MathJax on one of its pages
    # loaded as the page tests load it (its scripts, MathJax among them, run before the page completes:
    # right after `get`, on a loaded machine, MathJax may not be there yet)
    problems, _ = render_problems(browser, f"{base}/{BROWSER_PAGES['theory']}", shots_dir / "control-theory.png")
    assert not problems, problems
    assert not math_problems(browser)  # the page typesets cleanly first
    planted = {"TeX errors": "\\frac{1}", "undefined macro": "\\undefinedmacro x"}
    for word, tex in planted.items():
        browser.execute_script(
            "const d = document.createElement('div'); d.className = 'math'; d.id = 'planted';"
            " d.textContent = '\\\\(' + arguments[0] + '\\\\)'; document.body.appendChild(d);"
            " MathJax.typeset([d]);",
            tex,
        )
        assert any(word in p for p in math_problems(browser)), word
        browser.execute_script("document.getElementById('planted').remove()")


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
