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
            "images": images}


_MADE_BY = re.compile(r"^Made by `(?P<command>[^`]*)` \(profile `(?P<profile>[^`]*)`", re.M)


def index(out: Path) -> Path:
    """``README.md`` listing every snippet in ``out`` (also those of earlier runs)."""
    lines = ["<!-- generated by `make docs` (scripts/make_docs.py); do not edit -->\n",
             "# Reproduced tables and figures\n\n",
             "Regenerated from `outputs/` by `make docs` after a study's make target. Each "
             "entry names the command and profile that made it.\n\n"]
    for s in STUDIES:
        path = out / f"{s.name}.md"
        m = _MADE_BY.search(path.read_text()) if path.is_file() else None
        if m:
            lines.append(f"- [{s.title}]({s.name}.md): `{m['command']}` (profile "
                         f"`{m['profile']}`)\n")
    path = out / "README.md"
    path.write_text("".join(lines))
    return path


FRONT_BEGIN, FRONT_END = "<!-- make docs: front -->", "<!-- /make docs: front -->"
_IMAGE = re.compile(r"^!\[[^\]]*\]\((?P<src>[^)]+)\)", re.M)


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


_CLAIM = re.compile(r"^- (?P<k>C\d) (?P<held>holds|does not hold) \((?P<n>\d+/\d+)\)", re.M)
_RATE = re.compile(r"^\| Synthetic-\d \| (?P<rate>[0-9.]+)(?P<over> \*\*over the cap\*\*)?", re.M)


def table1_status(text: str) -> str:
    """The claims line of Table 1's snippet (each of C1-C5: held or not, with its count) and
    its positive rates against the paper's caps: what the front page says before any number."""
    claims = [(m["k"], m["held"] == "holds", m["n"]) for m in _CLAIM.finditer(text)]
    rates = [(float(m["rate"]), bool(m["over"])) for m in _RATE.finditer(text)]
    parts = []
    if claims:
        held = sum(h for _, h, _ in claims)
        parts.append(f"The paper's claims held: {held} of {len(claims)} ("
                     + ", ".join(f"{k} {'held' if h else 'not held'} {n}" for k, h, n in claims)
                     + "; the claims: docs/readings.md).")
    if rates:
        lo, hi = min(r for r, _ in rates), max(r for r, _ in rates)
        over = sum(o for _, o in rates)
        span = f"{lo:.2f}" if abs(hi - lo) < 5e-3 else f"{lo:.2f}–{hi:.2f}"
        parts.append(f"Positive rate {span} on the {len(rates)} columns"
                     + (f", over the paper's cap on {over}" if over else
                        ", within the caps the paper's lowest APs allow") + ".")
    return " ".join(parts) or "(no claims line in the snippet)"


def front_block(out: Path, rel: str) -> str | None:
    """Table 1 and Fig. 4 from their snippets in ``out``, for the README's opening (image
    paths relative to the README: ``rel``); None until both snippets exist."""
    t1, f4 = out / "table1.md", out / "fig4.md"
    if not (t1.is_file() and f4.is_file()):
        return None
    t1_text, f4_text = t1.read_text(), f4.read_text()
    m1, m4 = _MADE_BY.search(t1_text), _MADE_BY.search(f4_text)
    images = " ".join(f"![Fig. 4: {Path(m['src']).stem}]({rel}/{m['src']})"
                      for m in _IMAGE.finditer(f4_text))
    return (f"{FRONT_BEGIN}\n<!-- generated by `make docs` from docs/figures/table1.md and "
            f"fig4.md; do not edit between these markers -->\n"
            f"**Table 1** (`{m1['command']}`, profile `{m1['profile']}`). "
            f"{table1_status(t1_text)}\n\n"
            f"{_first_table(t1_text)}\n"
            f"**Fig. 4** (`{m4['command']}`, profile `{m4['profile']}`): scores of the unfair and "
            f"the fair model per test; what holds and what does not: "
            f"[docs/results_real.md](docs/results_real.md).\n\n{images}\n\n"
            f"All results beside the paper's numbers: [docs/results.md](docs/results.md); every "
            f"table and figure with its command: [{rel}/README.md]({rel}/README.md).\n"
            f"{FRONT_END}")


def update_readme(readme: Path, out: Path) -> bool:
    """Replace the README's block between the front markers; False when it has none (or
    Table 1 / Fig. 4 are not built yet)."""
    if not readme.is_file():
        return False
    text = readme.read_text()
    a, b = text.find(FRONT_BEGIN), text.find(FRONT_END)
    if a < 0 or b < a:
        return False
    rel = os.path.relpath(out.resolve(), readme.parent.resolve())
    block = front_block(out, rel)
    if block is None:
        return False
    readme.write_text(text[:a] + block + text[b + len(FRONT_END):])
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
    except DocsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    index(args.out)
    if update_readme(args.readme, args.out):
        print(f"{args.readme}: Table 1 and Fig. 4 block updated")
    for e in entries:
        print(f"{e['study']}: {e['command']} -> {args.out / (e['study'] + '.md')}"
              + (f" + {len(e['images'])} png" if e["images"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
