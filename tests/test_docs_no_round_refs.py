"""No development history in src/ and conf/: no "round N", "issue N" or "#NN" in code,
comments or config (the history lives in docs/notebook/)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: "round 8", "Round-12", "issue 14", "issues 3", "(#31)"; not a CSS or hex colour (#070, #b00)
PATTERN = re.compile(r"\b(?:rounds?|issues?)[\s-]*#?\d+\b|(?<![\w:'\"&#])#\d{1,4}\b",
                     re.IGNORECASE)


def offenders(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.suffix in {".pyc", ".png"} or "__pycache__" in path.parts:
            continue
        for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if PATTERN.search(line):
                out.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()[:100]}")
    return out


def test_pattern_catches_history_and_spares_colours():
    for bad in ("# round 8 of the notes", "see Round-12", "(issue 14)", "fixed in #31",
                "Issues 3 and 4"):
        assert PATTERN.search(bad), bad
    for ok in ("color:#070", "'#4a7fc1'", '"#000"', "round(x, 3)", "rounded 4 times",
               "the #-th item", "grounds 5"):
        assert not PATTERN.search(ok), ok


def test_src_and_conf_name_no_rounds_or_issues():
    found = offenders(ROOT / "src") + offenders(ROOT / "conf")
    assert not found, "\n".join(found)
