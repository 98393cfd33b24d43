"""Regenerate docs/figures/ from the latest results: ``make docs`` (offline).

    python scripts/make_docs.py [--only table1,fig4] [--outputs outputs] [--out docs/figures]

For each study it reads ``outputs/results/<study>.*`` and ``outputs/figures/<study>*.png``,
writes downscaled copies of the figures (PNG, < 200 KB each) and a markdown snippet
``docs/figures/<study>.md`` (the table and the images), and an index ``docs/figures/README.md``.
Every snippet names the command and profile that made it, read from the job results
(``result.json`` -> ``config.profile.name``) of the sweep the results came from: the
``<study>.provenance.json`` aggregation writes beside the results (``faux.harness.provenance``) when
present, else the sweep (or run) under ``outputs/<task>/`` whose last job finished last
before the results were written (a guess when several sweeps of a study exist).
A study without results fails the whole run with one line naming it and its make target.

It also writes ``docs/figures/claims.json``: per study, the paper's claims it checks, held or
not, with the numbers (``scripts/docslib/claims.py``), the command, profile and the measured job
time; a real-data study (fig4, table3, table4) that is not built in this run is read from its
committed snippet. From that file it rewrites the README's "Reproduction status" table and
its results block (Table 1, Fig. 4 and what Fig. 4 shows), each between its markers.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from faux.harness import provenance as P

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docslib import claims as C  # noqa: E402  (scripts/docslib/claims.py)

MAX_BYTES = 200_000
MAX_WIDTH = 1000
#: results may be written up to this long after (aggregation) or before (fig8 writes its csv,
#: then result.json) the last job of their sweep
SLACK_S = 600.0


@dataclass(frozen=True)
class Study:
    name: str
    title: str
    task: str                  # outputs/<task>/ holds its sweep
    target: str                # make target
    tables: tuple[str, ...]    # results files: the first must exist; .md copied, .csv rendered
    figures: tuple[str, ...]   # globs under outputs/figures (at least one file each)
    multirun: bool = True


STUDIES = (
    Study("table1", "Table 1: AP of the tests on the synthetic columns", "table1", "table1",
          ("table1.md",), ()),
    Study("fig4", "Fig. 4/10: scores of the unfair and the fair model (real data)", "real",
          "fig4", ("fig4.md", "real_models.md"), ("fig4_*.png",)),
    Study("table3", "Table 3: NDCG of the transparency reports", "real", "table3",
          ("table3.md",), ()),
    Study("table4", "Table 4: FlipTest vs fAux parameters and training time", "real",
          "table4", ("table4.md",), ()),
    Study("fig5", "Fig. 5: fAux precision-recall by bias, aux accuracy, target gradient",
          "fig5", "fig5", ("fig5.md",), ("fig5.png", "fig5_faux_rank.png")),
    Study("fig8", "Fig. 8: IFS histograms by bias", "fig8", "fig8", ("fig8.csv",),
          ("fig8.png",), multirun=False),
    Study("fig11", "Fig. 11: FlipTest AP against its GAN's KS and MSE", "fig11", "fig11",
          ("fig11.md",), ("fig11.png",)),
    Study("readings", "Readings of the synthetic benchmark: which reproduces Table 1",
          "readings", "readings", ("readings.md",), ("readings.png",)),
)
BY_NAME = {s.name: s for s in STUDIES}


class DocsError(Exception):
    """One line for the user."""


# --------------------------------------------------------------------------- presence
def missing_parts(study: Study, results: Path, figures: Path) -> list[str]:
    out = []
    if not (results / study.tables[0]).is_file():
        out.append(str(results / study.tables[0]))
    for pattern in study.figures:
        if not sorted(figures.glob(pattern)):
            out.append(str(figures / pattern))
    return out


def check_present(studies, results: Path, figures: Path) -> None:
    """Raise one line naming every study without results and the make target(s) to run."""
    absent = [(s, missing_parts(s, results, figures)) for s in studies]
    absent = [(s, parts) for s, parts in absent if parts]
    if absent:
        names = ", ".join(f"{s.name} ({parts[0]})" for s, parts in absent)
        targets = " ".join(dict.fromkeys(s.target for s, _ in absent))
        raise DocsError(f"no results for {names}: run `make {targets}` first "
                        f"(or `make docs ONLY=<studies>` for the ones you have)")


# --------------------------------------------------------------------------- provenance
@dataclass
class Provenance:
    profile: str
    command: str
    source: str        # the sweep or run folder
    n_jobs: int


def _jobs(folder: Path) -> list[tuple[Path, dict]]:
    out = []
    for p in sorted(folder.rglob("result.json")):
        try:
            out.append((p, json.loads(p.read_text())))
        except (OSError, ValueError):
            continue
    return out


def _overrides(job_dir: Path) -> list[str]:
    """The job's command-line overrides (Hydra's ``.hydra/overrides.yaml``)."""
    try:
        import yaml

        return list(yaml.safe_load((job_dir / ".hydra" / "overrides.yaml").read_text()) or [])
    except Exception:          # absent or malformed: no overrides to report
        return []


def cli_overrides(folder: Path, job_overrides: list[list[str]]) -> list[str]:
    """The overrides typed on the command line: the sweep's ``multirun.yaml``, else those
    every job shares (a swept key differs between jobs); a single run's own overrides."""
    typed = P.sweep_overrides(folder)
    if typed is not None:
        return typed
    if not job_overrides:
        return []
    shared = set(job_overrides[0]).intersection(*map(set, job_overrides[1:]))
    return [o for o in job_overrides[0] if o in shared]


def provenance(study: Study, outputs: Path, results: Path) -> Provenance:
    """From ``<study>.provenance.json`` (written by aggregation) when present, else from the
    sweep under ``outputs/<task>/`` whose last job finished last before the results."""
    side = P.read(results, study.name)
    if side is not None:
        sweeps = side.get("sweeps") or []
        return Provenance(str(side["profile"]),
                          P.make_command(study.target, str(side["profile"]),
                                         list(side.get("overrides") or [])),
                          ", ".join(map(str, sweeps)), int(side.get("n_jobs", 0)))
    base = outputs / study.task / ("multiruns" if study.multirun else "runs")
    folders = sorted(d for d in base.glob("*") if d.is_dir()) if base.is_dir() else []
    made = (results / study.tables[0]).stat().st_mtime
    candidates = []
    for d in folders:
        jobs = [(p, r) for p, r in _jobs(d) if r.get("status") == "ok"]
        if jobs:
            last = max(p.stat().st_mtime for p, _ in jobs)
            candidates.append((last, d, jobs))
    if not candidates:
        raise DocsError(f"{study.name}: no job results under {base} to read the profile from; "
                        f"run `make {study.target}` (docs name the profile that made them)")
    before = [c for c in candidates if c[0] <= made + SLACK_S]
    last, folder, jobs = max(before or candidates, key=lambda c: c[0])
    profile = P.profile_names([r for _, r in jobs])
    cli = cli_overrides(folder, [_overrides(p.parent) for p, _ in jobs])
    extra = [o for o in cli if o.split("=", 1)[0] not in P.MAKE_SET]
    if not study.multirun and extra:        # `make fig8` passes no ARGS: the run's own command
        command = "python -m faux.run " + " ".join(shlex.quote(o) for o in cli)
    else:
        command = P.make_command(study.target, profile, cli)
    return Provenance(profile, command, str(folder), len(jobs))


# --------------------------------------------------------------------------- images
def _png_bytes(im) -> bytes:
    buf = io.BytesIO()
    im.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def small_png(src: Path, dst: Path, max_bytes: int = MAX_BYTES, max_width: int = MAX_WIDTH) -> int:
    """A copy of ``src`` at most ``max_width`` wide and under ``max_bytes``: full colour when
    that fits, else a 256-colour palette, else narrower; returns its size in bytes."""
    from PIL import Image

    with Image.open(src) as im:
        im = im.convert("RGB")
    width = min(max_width, im.width)
    while True:
        h = max(1, round(im.height * width / im.width))
        small = im.resize((width, h), Image.LANCZOS) if width != im.width else im
        data = _png_bytes(small)
        if len(data) > max_bytes:
            data = _png_bytes(small.quantize(colors=256))
        if len(data) <= max_bytes or width <= 200:
            break
        width = int(width * 0.8)
    if len(data) > max_bytes:
        raise DocsError(f"{src}: cannot make it smaller than {max_bytes} bytes")
    dst.write_bytes(data)
    return len(data)


# --------------------------------------------------------------------------- markdown
def csv_to_md(path: Path, digits: int = 4) -> str:
    import pandas as pd

    frame = pd.read_csv(path)

    def cell(v):
        if isinstance(v, float):
            return f"{v:.{digits}g}"
        return str(v)

    head = "| " + " | ".join(map(str, frame.columns)) + " |\n"
    rule = "|" + "---|" * len(frame.columns) + "\n"
    rows = "".join("| " + " | ".join(cell(v) for v in r) + " |\n"
                   for r in frame.itertuples(index=False))
    return head + rule + rows


def snippet(study: Study, prov: Provenance, results: Path, images: list[str]) -> str:
    out = [f"<!-- generated by `make docs` (scripts/make_docs.py) from {results}; "
           f"do not edit: rerun `make {study.target}` then `make docs` -->\n",
           f"### {study.title}\n\n",
           f"Made by `{prov.command}` (profile `{prov.profile}`, {prov.n_jobs} job(s) in "
           f"`{prov.source}`).\n\n"]
    for img in images:
        out.append(f"![{study.title}]({img})\n\n")
    for name in study.tables:
        path = results / name
        if not path.is_file():
            continue
        text = path.read_text() if path.suffix == ".md" else csv_to_md(path)
        out.append(text.rstrip() + "\n\n")
    return "".join(out).rstrip() + "\n"


def build_study(study: Study, outputs: Path, results: Path, figures: Path, out: Path) -> dict:
    prov = provenance(study, outputs, results)
    for old in [*out.glob(f"{study.name}.png"), *out.glob(f"{study.name}_*.png")]:
        old.unlink()
    images = []
    for pattern in study.figures:
        for src in sorted(figures.glob(pattern)):
            small_png(src, out / src.name)
            images.append(src.name)
    (out / f"{study.name}.md").write_text(snippet(study, prov, results, images))
    return {"study": study.name, "command": prov.command, "profile": prov.profile,
            "images": images, "prov": prov}


def regime_readings(results: Path) -> list[str]:
    """The readings of the second generator regimes whose Table 1 is under
    ``<results>/table1_<reading>/`` (``make table1-regime REGIME=<reading>``)."""
    return [d.parent.name.removeprefix("table1_")
            for d in sorted(results.glob("table1_*/table1.md"))]


def build_regime(reading: str, results: Path, out: Path) -> dict:
    """``<out>/table1_<reading>.md``: Table 1 under a second generator regime, beside the
    selected reading's ``table1.md``, with the command that made it."""
    folder = results / f"table1_{reading}"
    side = P.read(folder, "table1") or {}
    profile = str(side.get("profile", "?"))
    extra = [o for o in side.get("overrides") or []
             if o.split("=", 1)[0] not in (*P.MAKE_SET, "reading")]
    command = f"make table1-regime REGIME={reading} PROFILE={profile}"
    if extra:
        command += f" ARGS={shlex.quote(' '.join(extra))}"
    sweeps = ", ".join(map(str, side.get("sweeps") or [])) or "?"
    name = f"table1_{reading}"
    text = (f"<!-- generated by `make docs` (scripts/make_docs.py) from {folder}; do not edit: "
            f"rerun `make table1-regime REGIME={reading}` then `make docs` -->\n"
            f"### Table 1 under a second generator regime: reading `{reading}`\n\n"
            f"Made by `{command}` (profile `{profile}`, {int(side.get('n_jobs', 0))} job(s) "
            f"in `{sweeps}`).\n\n" + (folder / "table1.md").read_text().rstrip() + "\n")
    (out / f"{name}.md").write_text(text)
    return {"study": name, "command": command, "images": []}


_MADE_BY = re.compile(r"^Made by `(?P<command>[^`]*)` \(profile `(?P<profile>[^`]*)`", re.M)


def index(out: Path) -> Path:
    """``README.md`` listing every snippet in ``out`` (also those of earlier runs)."""
    lines = ["<!-- generated by `make docs` (scripts/make_docs.py); do not edit -->\n",
             "# Tables and figures, as run\n\n",
             "Regenerated from `outputs/` by `make docs` after a study's make target. Each "
             "entry names the command and profile that made it; the paper's claims each holds: "
             f"[{CLAIMS_FILE}]({CLAIMS_FILE}) (the README's status table).\n\n"]
    for s in STUDIES:
        path = out / f"{s.name}.md"
        m = _MADE_BY.search(path.read_text()) if path.is_file() else None
        if m:
            lines.append(f"- [{s.title}]({s.name}.md): `{m['command']}` (profile "
                         f"`{m['profile']}`)\n")
        if s.name == "table1":
            for path in sorted(out.glob("table1_*.md")):
                m = _MADE_BY.search(path.read_text())
                if m:
                    reading = path.stem.removeprefix("table1_")
                    lines.append(f"- [Table 1 under the generator regime `{reading}`]"
                                 f"({path.name}): `{m['command']}` (profile `{m['profile']}`)\n")
    path = out / "README.md"
    path.write_text("".join(lines))
    return path


# --------------------------------------------------------------------------- claims
CLAIMS_FILE = "claims.json"


def _sweep_dirs(source: str, outputs: Path) -> list[Path]:
    out = []
    for s in filter(None, (x.strip() for x in source.split(","))):
        p = Path(s)
        for cand in (p, outputs.parent / p, outputs / p):
            if cand.is_dir():
                out.append(cand)
                break
    return out


def measured_time(source: str, outputs: Path) -> dict | None:
    """The time the results' jobs took, from their ``result.json``: ``job_s`` (the sum of
    ``timings.wall_s``), ``n_jobs`` and, when every job records ``started``/``finished``,
    ``span_s`` (first start to last finish: wall clock with the sweep's parallel jobs)."""
    jobs = [r for d in _sweep_dirs(source, outputs) for _, r in _jobs(d)
            if r.get("status") == "ok"]
    walls = [float((r.get("timings") or {}).get("wall_s") or 0.0) for r in jobs]
    if not jobs or not any(walls):
        return None
    out = {"job_s": round(sum(walls), 1), "n_jobs": len(jobs), "span_s": None}
    marks = [(m.get("started"), m.get("finished")) for m in (r.get("metrics") or {} for r in jobs)]
    if all(isinstance(a, (int, float)) and isinstance(b, (int, float)) for a, b in marks):
        out["span_s"] = round(max(b for _, b in marks) - min(a for a, _ in marks), 1)
    return out


def study_claims(study: Study, results: Path, out: Path) -> tuple[list[dict], str, str | None]:
    """(claims, the file they were read from, why none could be read)."""
    md = results / f"{study.name}.md"
    snippet_path = md if md.is_file() else out / f"{study.name}.md"
    text = snippet_path.read_text() if snippet_path.is_file() else ""
    source = str(results / C.CSV[study.name]) if study.name in C.CSV else str(snippet_path)
    try:
        return C.CLAIMS_OF[study.name](results, text), source, None
    except Exception as exc:      # results of an older layout: the study's row says so
        return [], source, f"{type(exc).__name__}: {exc}"


def entry(study: Study, claims: list[dict], source: str, error: str | None, command: str,
          profile: str, time: dict | None) -> dict:
    return {"title": study.title, "short": C.SHORT[study.name], "paper": C.PAPER[study.name],
            "status": C.status(claims), "claims": claims,
            "command": command, "profile": profile, "time": time, "source": source,
            "error": error, "section": f"{study.name}.md"}


def update_claims(built: dict, outputs: Path, results: Path, out: Path) -> dict:
    """``out/claims.json``: every study built now from its results; a real-data study not
    built now from its committed snippet in ``out``; any other study as it was."""
    path = out / CLAIMS_FILE
    old = json.loads(path.read_text()).get("studies", {}) if path.is_file() else {}
    studies = {}
    for s in STUDIES:
        if s.name in built:
            prov = built[s.name]
            claims, source, err = study_claims(s, results, out)
            studies[s.name] = entry(s, claims, source, err, prov.command, prov.profile,
                                    measured_time(prov.source, outputs))
        elif s.name in C.FROM_SNIPPET and (out / f"{s.name}.md").is_file():
            snip = out / f"{s.name}.md"
            m = _MADE_BY.search(snip.read_text())
            claims, _, err = study_claims(s, out, out)
            prev = old.get(s.name) or {}
            studies[s.name] = entry(s, claims, str(snip), err, m["command"] if m else "?",
                                    m["profile"] if m else "?", prev.get("time"))
        elif s.name in old:
            studies[s.name] = old[s.name]
    data = {"generated_by": "make docs (scripts/make_docs.py)", "studies": studies}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return data


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def time_cell(time: dict | None) -> str:
    if not time:
        return "not recorded (its jobs are not in outputs/)"
    out = f"{_minutes(time['job_s'])} over {time['n_jobs']} job(s)"
    if time.get("span_s"):
        out += f", {_minutes(time['span_s'])} wall"
    return out


def claims_cell(e: dict) -> str:
    if not e["claims"]:
        return f"**unknown**: no claims read ({e.get('error') or 'none stated'})"
    n = sum(c["held"] for c in e["claims"])
    parts = [f"{c['id']} {'✓' if c['held'] else '✗'} {c['ours']}" for c in e["claims"]]
    return f"**{e['status']}** ({n}/{len(e['claims'])}): " + "; ".join(parts)


def status_table(data: dict, rel: str) -> str:
    """The README's "Reproduction status" table, from ``claims.json`` (``rel``: the figures
    folder relative to the README)."""
    lines = ["| | the paper | ours (✓ holds, ✗ does not) | profile: command | measured time |",
             "|---|---|---|---|---|"]
    for s in STUDIES:
        e = data["studies"].get(s.name)
        if e is None:
            continue
        cells = [f"[{e['short']}]({rel}/{e['section']})", e["paper"], claims_cell(e),
                 f"`{e['profile']}`: `{e['command']}`", time_cell(e.get("time"))]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


STATUS_BEGIN, STATUS_END = "<!-- make docs: status -->", "<!-- /make docs: status -->"
FRONT_BEGIN, FRONT_END = "<!-- make docs: results -->", "<!-- /make docs: results -->"
_IMAGE = re.compile(r"^!\[[^\]]*\]\((?P<src>[^)]+)\)", re.M)


def status_block(data: dict, rel: str) -> str:
    return (f"{STATUS_BEGIN}\n<!-- generated by `make docs` from {rel}/{CLAIMS_FILE}; do not "
            f"edit between these markers -->\n{status_table(data, rel)}\n"
            f"*held*: every claim of the row holds; *partly*: some do; *not held*: none. Each "
            f"row's claims are computed from its results ({rel}/{CLAIMS_FILE}, "
            f"`scripts/docslib/claims.py` states the thresholds); the time is the sum of the "
            f"jobs' measured `wall_s` (jobs that found their models cached take less). The "
            f"`quick` profile runs smaller data and fewer seeds than the paper "
            f"([docs/reproduce.md](docs/reproduce.md)).\n{STATUS_END}")


def _first_table(text: str) -> str:
    """The first markdown table in ``text`` (its caption line before it included)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:
        return ""
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    caption = lines[start - 1] if start > 0 and lines[start - 1].strip() \
        and not lines[start - 1].startswith(("Made by", "<!--", "#")) else ""
    return ((caption + "\n\n") if caption else "") + "\n".join(lines[start:end]) + "\n"


def claims_sentence(e: dict | None) -> str:
    """``Claims: C1: not held (2/8 columns); ...`` from a study's claims.json entry."""
    if not e or not e["claims"]:
        return ""
    return ("Claims: " + "; ".join(f"{claim_phrase(c)} ({c['ours']})" for c in e["claims"])
            + ".")


def claim_phrase(c: dict) -> str:
    """``C1: not held``: how the README names a claim outside the status table."""
    return f"{c['id']}: {'held' if c['held'] else 'not held'}"


def fig4_findings(e: dict | None) -> str:
    """A sentence per dataset where the fair model passes the fairness check yet fAux+NG
    scores it above the unfair model (AUROC < 0.5)."""
    out = []
    for c in (e or {}).get("claims", []):
        f = c.get("facts") or {}
        if f.get("fair_check") == "pass" and f.get("auroc") is not None and f["auroc"] < 0.5:
            out.append(f"**On {c['id']} the fair model passes the fairness check that no test "
                       f"uses, yet {C.PLOTTED} scores it above the unfair model** (AUROC "
                       f"{f['auroc']:.3f}; below 0.5 the fair model scores higher).")
    return " ".join(out)


def front_block(out: Path, rel: str, data: dict | None = None) -> str | None:
    """Table 1 and Fig. 4 from their snippets in ``out`` and their claims, for the README's
    results section (image paths relative to the README: ``rel``); None until both exist."""
    t1, f4 = out / "table1.md", out / "fig4.md"
    if not (t1.is_file() and f4.is_file()):
        return None
    studies = (data or {}).get("studies", {})
    t1_text, f4_text = t1.read_text(), f4.read_text()
    m1, m4 = _MADE_BY.search(t1_text), _MADE_BY.search(f4_text)
    images = " ".join(f"![Fig. 4: {Path(m['src']).stem}]({rel}/{m['src']})"
                      for m in _IMAGE.finditer(f4_text))
    f4_claims = claims_sentence(studies.get("fig4"))
    return (f"{FRONT_BEGIN}\n<!-- generated by `make docs` from {rel}/table1.md, fig4.md and "
            f"{CLAIMS_FILE}; do not edit between these markers -->\n"
            f"**Table 1** (`{m1['command']}`, profile `{m1['profile']}`). "
            f"{claims_sentence(studies.get('table1'))}\n\n"
            f"{_first_table(t1_text)}\n"
            f"**Fig. 4** (`{m4['command']}`, profile `{m4['profile']}`): scores of the unfair and "
            f"the fair model per test. {f4_claims} {fig4_findings(studies.get('fig4'))} Why: "
            f"[docs/numbers.md](docs/numbers.md).\n\n{images}\n\n"
            f"Every table and figure with its command: [{rel}/README.md]({rel}/README.md).\n"
            f"{FRONT_END}")


def _replace(text: str, begin: str, end: str, block: str | None) -> str:
    a, b = text.find(begin), text.find(end)
    if block is None or a < 0 or b < a:
        return text
    return text[:a] + block + text[b + len(end):]


def update_readme(readme: Path, out: Path, data: dict | None = None) -> bool:
    """Replace the README's status block and its results block (between their markers);
    False when it has neither (or they cannot be built yet)."""
    if not readme.is_file():
        return False
    text = readme.read_text()
    rel = os.path.relpath(out.resolve(), readme.parent.resolve())
    new = _replace(text, FRONT_BEGIN, FRONT_END, front_block(out, rel, data))
    if data is not None:
        new = _replace(new, STATUS_BEGIN, STATUS_END, status_block(data, rel))
    if new == text and FRONT_BEGIN not in text and STATUS_BEGIN not in text:
        return False
    readme.write_text(new)
    return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="make_docs.py", description=__doc__.splitlines()[0])
    ap.add_argument("--outputs", type=Path, default=Path("outputs"),
                    help="where the sweeps are (outputs/<task>/...)")
    ap.add_argument("--results-dir", type=Path, default=None, help="default <outputs>/results")
    ap.add_argument("--figures-dir", type=Path, default=None, help="default <outputs>/figures")
    ap.add_argument("--out", type=Path, default=Path("docs/figures"))
    ap.add_argument("--readme", type=Path, default=Path("README.md"),
                    help=f"its block between {FRONT_BEGIN} and {FRONT_END} gets Table 1 and "
                         "Fig. 4 (left alone without the markers)")
    ap.add_argument("--only", default="", help="comma-separated studies (default: all): "
                    + ",".join(BY_NAME))
    args = ap.parse_args(argv)
    results = args.results_dir or args.outputs / "results"
    figures = args.figures_dir or args.outputs / "figures"
    try:
        names = [n.strip() for n in args.only.split(",") if n.strip()] or list(BY_NAME)
        unknown = [n for n in names if n not in BY_NAME]
        if unknown:
            raise DocsError(f"unknown study {', '.join(unknown)}; choose from "
                            f"{', '.join(BY_NAME)}")
        studies = [BY_NAME[n] for n in names]
        check_present(studies, results, figures)
        args.out.mkdir(parents=True, exist_ok=True)
        entries = [build_study(s, args.outputs, results, figures, args.out) for s in studies]
        regimes = [build_regime(r, results, args.out) for r in regime_readings(results)
                   if "table1" in names]
    except DocsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    data = update_claims({s.name: e["prov"] for s, e in zip(studies, entries)},
                         args.outputs, results, args.out)
    index(args.out)
    if update_readme(args.readme, args.out, data):
        print(f"{args.readme}: status table and results block updated")
    for e in [*entries, *regimes]:
        print(f"{e['study']}: {e['command']} -> {args.out / (e['study'] + '.md')}"
              + (f" + {len(e['images'])} png" if e["images"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
