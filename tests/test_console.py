"""The end-of-run summary (faux.harness.console): ours beside the paper's, claims, paths, and every
failed or missing cell named with its log, as plain text and as a rich table."""

import re
from types import SimpleNamespace

import pandas as pd
import pytest

from faux.harness.console import fmt_value, print_summary, render_report, render_summary

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture
def table1(tmp_path) -> pd.DataFrame:
    """A table1.csv in the format the lead reads (round-tripped through a csv file)."""
    frame = pd.DataFrame({
        "column": ["Synthetic-1", "Synthetic-1", "Synthetic-2", "Synthetic-2"],
        "method": ["faux_ng", "fta", "faux_ng", "fta"],
        "ap_mean": [0.8761, 0.3049, 0.9990, 0.2977],
        "ap_std": [0.0154, 0.0, 0.0007, float("nan")],
        "positive_rate": [0.12, 0.12, 0.30, 0.30],
        "paper": [0.876, 0.307, 0.999, None],
    })
    path = tmp_path / "table1.csv"
    frame.to_csv(path, index=False)
    return pd.read_csv(path)


def test_plain_rows_put_the_paper_beside_ours(table1):
    text = render_summary("Table 1", table1, claims="fAux+NG above FTA on every column",
                          paths=["outputs/results/table1.csv", "outputs/results/table1.md"],
                          missing=[("Synthetic-3/faux", "unfinished; log: outputs/t/7/run.log")],
                          tty=False)
    lines = text.splitlines()
    assert lines[0] == "== Table 1 =="
    row = next(line for line in lines if "Synthetic-1" in line and "faux_ng" in line)
    # ours (mean ± std, 3 digits) then the paper's value on the same row
    assert re.search(r"0\.876 ± 0\.015\s+0\.876\b", row)
    row = next(line for line in lines if "Synthetic-2" in line and "fta" in line)
    assert re.search(r"0\.298\s+—", row)          # no std, no paper value: a dash
    assert "Claims: fAux+NG above FTA on every column" in lines
    assert "Wrote: outputs/results/table1.csv, outputs/results/table1.md" in lines
    assert "Failed or missing (1):" in lines
    assert "  Synthetic-3/faux: unfinished; log: outputs/t/7/run.log" in lines
    assert not ANSI.search(text)


def test_pivot_names_every_cell(table1):
    text = render_summary("Table 1", table1, pivot=("method", "column"), tty=False)
    head, _, *rows = text.splitlines()[1:]
    assert "Synthetic-1" in head and "Synthetic-2" in head
    assert [r.split()[0] for r in rows] == ["faux_ng", "fta"]
    assert "0.876 ± 0.015 / 0.876" in rows[0] and "0.999 ± 0.001 / 0.999" in rows[0]
    assert "0.298 / —" in rows[1]


def test_paper_from_columns_or_mapping_and_claims_mapping():
    rows = [{"dataset": "adult", "method": "faux", "ndcg_mean": 0.81, "ndcg_std": 0.05,
             "paper_ndcg_mean": 0.802, "paper_ndcg_std": 0.058}]
    text = render_summary("Table 3", rows, tty=False, claims={"fAux+IG best": False})
    assert re.search(r"0\.810 ± 0\.050\s+0\.802 ± 0\.058", text)
    assert "Claims: fAux+IG best (does not hold)" in text
    text = render_summary("Table 3", rows, tty=False, value="ndcg_mean",
                          paper={("adult", "faux"): (0.5, 0.1)})
    assert re.search(r"0\.810 ± 0\.050\s+0\.500 ± 0\.100", text)
    with pytest.raises(KeyError, match="nope"):
        render_summary("x", rows, paper="nope", tty=False)


def test_tty_renders_a_rich_table_with_the_same_cells(table1):
    text = render_summary("Table 1", table1, missing=["Synthetic-3/faux"], tty=True, width=100)
    assert ANSI.search(text)                       # colours on a terminal
    plain = ANSI.sub("", text)
    assert "┃" in plain and "Table 1" in plain
    assert "0.876 ± 0.015" in plain and "Synthetic-2" in plain
    assert "Failed or missing (1):" in plain and "Synthetic-3/faux" in plain


def test_empty_table_and_print_to_stream(capsys):
    print_summary("Fig. 5", [], missing=[("pair magic/backache", "log: a.log")])
    out = capsys.readouterr().out
    assert "(no finished cells)" in out and "pair magic/backache: log: a.log" in out


def test_fmt_value():
    assert fmt_value(0.5) == "0.500" and fmt_value((0.5, 0.25)) == "0.500 ± 0.250"
    assert fmt_value(float("nan")) == "—" and fmt_value(None) == "—"
    assert fmt_value(True) == "—" and fmt_value("0.9 ± 0.1") == "0.9 ± 0.1"


def test_render_report_lays_out_known_tables(table1):
    report = SimpleNamespace(frame=table1, files=["outputs/results/table1.csv"],
                             missing=[("Synthetic-3/fta", "no finished job")])
    text = render_report("table1", report, title="Table 1", tty=False)
    assert "method \\ column (ours / paper)" in text            # pivoted
    assert "0.876 ± 0.015 / 0.876" in text and "Synthetic-3/fta: no finished job" in text
    t3 = pd.DataFrame([{"dataset": "adult", "method": "faux", "ndcg_mean": 0.81,
                        "ndcg_std": 0.05, "paper_mean": 0.802, "paper_std": 0.058}])
    text = render_report("table3", SimpleNamespace(frame=t3, files=[], missing=[]), tty=False)
    assert "0.810 ± 0.050 / 0.802 ± 0.058" in text
    # a frame without the layout's columns falls back to the long form
    text = render_report("table1", SimpleNamespace(frame=t3, files=[], missing=[]), tty=False)
    assert re.search(r"adult\s+faux\s+0\.810 ± 0\.050\s+0\.802 ± 0\.058", text)
