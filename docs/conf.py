"""Sphinx configuration of the sgpverify documentation site.

Build it (from the repository root, after ``pip install -e ".[docs]"``)::

    python -m sphinx -W -b html docs docs/_build/html
"""

from __future__ import annotations

import os
import sys

import matplotlib

matplotlib.use("Agg")  # the gallery draws its figures without a display

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "_ext"))

import sgpverify  # noqa: E402

project = "sgpverify"
author = "the sgpverify authors"
copyright = "the sgpverify authors, MIT license"
release = sgpverify.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    # MathJax 3 from a PyPI package (the docs extra), copied into the built site's
    # _static/mathjax/ and loaded from there: the formulas render with no network
    "sphinx-mathjax-offline",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "claims_catalogue",  # docs/_ext/claims_catalogue.py: writes claims.md from sgpverify.suite.CLAIMS
]
# no sphinx.ext.intersphinx: the site builds, and its pages render, without network access

root_doc = "index"
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    "examples",  # docs/examples/*.py are scripts the guide links to, not pages
    "gallery",  # the gallery's sources: sphinx-gallery renders them into auto_examples/
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.zip",
    "auto_examples/*.codeobj.json",
    "**/sg_execution_times.rst",
    "sg_execution_times.rst",
]

# --- Markdown (myst-parser) ---------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
# a $$...$$ inside a paragraph or a list item (theory.md's proof steps) is display math, not a
# literal $ around an inline formula
myst_dmath_double_inline = True
myst_heading_anchors = 3  # the pages link to each other's headings: [x](theory.md#anchor)

# --- API reference (autosummary, autodoc, numpydoc) ---------------------------------------
autosummary_generate = True
autosummary_ignore_module_all = False  # a module's members are its __all__
autodoc_default_options = {"members": False}
autodoc_typehints = "none"  # the signatures carry the hints; numpydoc's Parameters carry the prose
# the distributed package imports torch only when a run starts; mocking keeps the build torch-free
autodoc_mock_imports = ["torch"]
numpydoc_show_class_members = False  # autosummary lists the members: no duplicate object descriptions
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()

# --- gallery (sphinx-gallery) -------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "gallery",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r".*\.py$",  # run every example, not only plot_*.py
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "download_all_examples": False,
    "write_computation_times": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
}

# --- HTML -----------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"sgpverify {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_static_path = ["_static"]
html_favicon = "_static/favicon.svg"
# a first visit has no stored colour mode; without a default the theme logs a console error
html_context = {"default_mode": "auto"}
html_show_sourcelink = False
