"""The documentation builds without a single warning (Sphinx's strict, nitpicky mode: a cross-reference
to a name that no longer exists fails it), and its generated parts (the parameter table, the benchmark
tables rendered from Markdown) are complete."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.slow
def test_docs_build_strict(tmp_path: Path) -> None:
    pytest.importorskip("sphinx", reason="sphinx is not installed (pip install -e '.[docs]')")
    pytest.importorskip("numpydoc", reason="numpydoc is not installed (pip install -e '.[docs]')")
    pytest.importorskip("pydata_sphinx_theme", reason="the theme is not installed (pip install -e '.[docs]')")
    pytest.importorskip("myst_parser", reason="myst-parser is not installed (pip install -e '.[docs]')")
    cmd = [sys.executable, "-m", "sphinx", "-n", "-W", "--keep-going", "-b", "html", "-q"]
    cmd += ["-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"strict Sphinx build failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    assert (tmp_path / "html" / "index.html").is_file()
    assert (tmp_path / "html" / "how_aaren_works.html").is_file()
    params = (tmp_path / "html" / "user_guide" / "parameters.html").read_text(encoding="utf-8")
    assert "Shared parameters" in params and "AarenForecaster only" in params
    results = (tmp_path / "html" / "results.html").read_text(encoding="utf-8")
    assert "markdown-table" in results and "| --- |" not in results and "|---|" not in results


def _param_table():
    """The docs' parameter-table generator (``docs/_ext/param_table.py``), imported as the build does."""
    pytest.importorskip("numpydoc", reason="numpydoc is not installed (pip install -e '.[docs]')")
    ext = str(DOCS / "_ext")
    if ext not in sys.path:
        sys.path.insert(0, ext)
    import param_table

    return param_table


def test_parameter_table_lists_every_parameter() -> None:
    """Every constructor parameter of both estimators is in the generated table, with a description."""
    param_table = _param_table()
    from aaren_ts import AarenClassifier, AarenForecaster

    classes = (AarenClassifier, AarenForecaster)
    text = param_table.parameter_tables_rst(classes)
    rows = {row.name: row for row in param_table.collect_parameters(classes)}
    for cls in classes:
        for name in param_table.signature_parameters(cls):
            missing = f"{cls.__name__} parameter {name!r} is missing from the parameter table"
            assert f"``{name}``" in text, missing
            assert rows[name].description, (
                f"{cls.__name__} parameter {name!r} has no description in the class docstring's "
                "Parameters section, so the parameter table cannot describe it"
            )
    # A parameter of both estimators is listed once, under "Shared parameters", before the others.
    shared = set(param_table.signature_parameters(AarenClassifier)) & set(
        param_table.signature_parameters(AarenForecaster)
    )
    assert {n for n, r in rows.items() if r.group == "shared"} == shared
    for name in shared:
        assert text.count(f"* - ``{name}``") == 1, f"shared parameter {name!r} is listed more than once"
    headings = ["Shared parameters", "AarenClassifier only", "AarenForecaster only"]
    assert [text.index(h) for h in headings] == sorted(text.index(h) for h in headings)


def test_parameter_table_reports_an_undocumented_parameter() -> None:
    """A parameter without a docstring entry is named in the problems the build turns into a warning."""
    param_table = _param_table()

    class Documented:
        """A toy estimator.

        Parameters
        ----------
        alpha : float, default=1.0
            Strength. More text.
        gone : int
            No longer a parameter.
        """

        def __init__(self, alpha=1.0, beta="x"):
            pass

    class Other:
        """Another.

        Parameters
        ----------
        beta : str, default="y"
            The beta of the other one.
        """

        def __init__(self, beta="y"):
            pass

    rows = {r.name: r for r in param_table.collect_parameters((Documented, Other))}
    assert rows["alpha"].description == "Strength."
    assert rows["alpha"].defaults == ("1.0", None)
    # beta is shared; Documented lacks an entry, so Other's description is used.
    assert rows["beta"].group == "shared" and rows["beta"].description == "The beta of the other one."
    problems = param_table.parameter_problems((Documented, Other))
    assert any("'gone'" in p for p in problems)
    assert not any("'beta'" in p and "no description" in p for p in problems)

    class Undocumented(Documented):
        def __init__(self, alpha=1.0, gamma=0):
            pass

    problems = param_table.parameter_problems((Undocumented, Other))
    assert any("'gamma'" in p and "no description" in p for p in problems)
    assert "``gamma``" in param_table.parameter_tables_rst((Undocumented, Other))


def test_markdown_tables_render_as_tables() -> None:
    """The benchmark Markdown becomes docutils tables whose cells hold the file's text unchanged."""
    ext = str(DOCS / "_ext")
    if ext not in sys.path:
        sys.path.insert(0, ext)
    pytest.importorskip("myst_parser", reason="myst-parser is not installed (pip install -e '.[docs]')")
    from docutils import nodes
    from markdown_results import markdown_to_nodes

    md = (
        "# Title with `code`\n\nSome --flag text, `$VAR` and **bold**.\n\n"
        "| model | MSE | note |\n|---|---|---|\n| A(x='y') | 0.4151 | 2s fit |\n"
        "| B \\| C | – |  |\n\n- an item\n"
    )
    out = markdown_to_nodes(md)
    kinds = [type(n) for n in out]
    assert kinds == [nodes.rubric, nodes.paragraph, nodes.table, nodes.bullet_list]
    table = out[2]
    cells = [e.astext() for e in table.findall(nodes.entry)]
    assert cells == ["model", "MSE", "note", "A(x='y')", "0.4151", "2s fit", "B | C", "–", ""]
    assert "--flag" in out[1].astext() and all(n["support_smartquotes"] is False for n in out)
    # the column of numbers is right-aligned (its "–" does not count); the others keep no alignment
    aligned = [e["classes"] for e in table.findall(nodes.entry)]
    assert aligned[1::3] == [["align-right"]] * 3 and aligned[0::3] == [[]] * 3
    assert "markdown-table" in table["classes"]


def test_markdown_headings_become_rubrics_and_alignment_is_kept() -> None:
    """Headings of any level become rubrics (never sections of the page), and an alignment written in
    the separator row wins over the numbers rule."""
    ext = str(DOCS / "_ext")
    if ext not in sys.path:
        sys.path.insert(0, ext)
    pytest.importorskip("myst_parser", reason="myst-parser is not installed (pip install -e '.[docs]')")
    from docutils import nodes
    from markdown_results import markdown_to_nodes

    md = "# One\n\ntext\n\n## Two\n\n| a | b |\n|:-:|---|\n| 1 | x |\n\n# Three\n"
    out = markdown_to_nodes(md)
    assert not any(isinstance(n, nodes.section) for top in out for n in top.findall(nodes.section))
    rubrics = [(n.astext(), n["classes"]) for n in out if isinstance(n, nodes.rubric)]
    assert rubrics == [("One", ["markdown-h1"]), ("Two", ["markdown-h2"]), ("Three", ["markdown-h1"])]
    table = next(n for n in out if isinstance(n, nodes.table))
    assert [e["classes"] for e in table.findall(nodes.entry)] == [["align-center"], [], ["align-center"], []]


def _conf():
    """``docs/conf.py`` as a module (its docstring hooks), imported as Sphinx does."""
    pytest.importorskip("myst_parser", reason="myst-parser is not installed (pip install -e '.[docs]')")
    import importlib.util

    spec = importlib.util.spec_from_file_location("aaren_ts_docs_conf", DOCS / "conf.py")
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    return conf


def test_parameter_table_qualifies_member_references() -> None:
    """A description's :meth:`name` of the estimator's own method resolves in the table, which has no
    class context: it is qualified by the class; a name the class does not have is left as written."""
    param_table = _param_table()
    from aaren_ts import AarenClassifier

    text = param_table.qualify_members(":meth:`predict_early` and :attr:`no_such_name`", AarenClassifier)
    assert text == ":meth:`~aaren_ts.AarenClassifier.predict_early` and :attr:`no_such_name`"


def test_docstring_hooks() -> None:
    """The estimators' references to their own methods are qualified (autosummary tables have no class
    context); sktime's inherited docstrings lose the cross-references into sktime's documentation and
    the markup docutils refuses; nothing else is changed."""
    conf = _conf()
    lines = [":meth:`predict` and :attr:`no_such_name`, :meth:`~x.y`"]
    conf._qualify_own_members(None, "method", "aaren_ts.AarenForecaster.predict_array", None, {}, lines)
    assert lines == [":meth:`~aaren_ts.AarenForecaster.predict` and :attr:`no_such_name`, :meth:`~x.y`"]

    def inherited():
        pass

    inherited.__module__ = "sktime.forecasting.base._base"
    sktime_text = [
        "Writes to self:",
        "    Updates self.cutoff.",
        "    If update_params=True,",
        "        updates fitted model attributes.",
        "",
        "    :term:`mtype`, see the :ref:`tag reference <panel_tags>`, :meth:`~sktime.a.b.score`,",
        "    in the order of self.classes_ and ``classes_``, :math:`x_1`",
    ]
    lines = list(sktime_text)
    conf._tame_foreign_docstrings(None, "method", "aaren_ts.AarenForecaster.update", inherited, {}, lines)
    assert lines == [
        "Writes to self:",
        "    Updates self.cutoff.",
        "    If update_params=True,",
        "",
        "        updates fitted model attributes.",
        "",
        "    *mtype*, see the ``tag reference``, ``score``,",
        "    in the order of self.classes\\_ and ``classes_``, :math:`x_1`",
    ]
    own = list(sktime_text)
    conf._tame_foreign_docstrings(None, "method", "aaren_ts.AarenForecaster.fit", _conf, {}, own)
    assert own == sktime_text
