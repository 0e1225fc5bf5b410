"""Tests of sgpverify.report's experiment configs: strict TOML keys and a cache
keyed by the package's source code."""

import hashlib
from pathlib import Path

import pytest

import sgpverify
from sgpverify import report, sweep
from sgpverify.cli import main

WEIGHTS = 'experiment = "weights"\nseed = 1\nfigures = []\n[config]\nn = 6\n'


@pytest.mark.parametrize(
    "text, message",
    [
        ('experiment = "weights"\n[confg]\nn = 6\n', "got unknown confg (did you mean 'config'?)"),
        ('experiment = "weights"\nseeed = 7\n', "got unknown seeed (did you mean 'seed'?)"),
        ('experiment = "weights"\nfigure = []\n', "got unknown figure (did you mean 'figures'?)"),
        ('experiment = "weights"\nzzz = 1\n', "got unknown zzz (valid: config, experiment, figures, seed)"),
        ('experiment = "weights"\nconfig = 3\n', "config must be a [config] table, got 3"),
        ('experiment = "weights"\nseed = -1\n', "seed must be an integer >= 0, got -1"),
        ('experiment = "weights"\nseed = "x"\n', "seed must be an integer >= 0, got 'x'"),
        ('experiment = "weights"\nfigures = "pushsum_weights"\n', "figures must be a list of figure names"),
    ],
)
def test_unknown_or_bad_keys_exit_2_naming_the_key(tmp_path, capsys, text, message):
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    code = main(["run", str(cfg), "--out", str(tmp_path / "f"), "--cache", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "c").exists()  # nothing ran


def test_misspelt_config_field_names_the_closest_field(tmp_path, capsys):
    import dataclasses

    from sgpverify.suite import SuiteConfig

    fields = [f.name for f in dataclasses.fields(SuiteConfig)]
    field = max(fields, key=len)
    typo = field[:-1]  # drop the last letter
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'experiment = "weights"\n[config]\n{typo} = 1\n')
    code = main(["run", str(cfg), "--out", str(tmp_path / "f"), "--cache", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert f"got unknown {typo} (did you mean {field!r}?)" in err


def test_source_hash_covers_every_source_file():
    root = Path(sgpverify.__file__).resolve().parent
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    assert sweep.source_hash() == h.hexdigest()[:16]


def test_cache_is_keyed_by_the_source_code(tmp_path, monkeypatch):
    cfg = tmp_path / "w.toml"
    cfg.write_text(WEIGHTS)
    kw = dict(out=tmp_path / "figs", cache_dir=tmp_path / "cache")
    res1, _, hit = report.run_config(cfg, **kw)
    assert not hit
    _, _, hit = report.run_config(cfg, **kw)
    assert hit
    # other code, same version: never served from the cache
    monkeypatch.setattr(sweep, "source_hash", lambda: "0123456789abcdef")
    res2, _, hit = report.run_config(cfg, **kw)
    assert not hit and res2 == res1
    assert len(list((tmp_path / "cache").glob("*.json"))) == 2
