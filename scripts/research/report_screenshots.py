"""The worked example's report as a reader sees it: runs the two python blocks and the
``faux audit`` command of docs/audit.md's "Worked example" section in a temporary folder
(Adult from the data root), opens the report in headless Chromium at 1,400 px wide and saves
two screenshots, cropped to the page's column and scaled to at most 1,000 px wide:

- ``report_first_screen.png``: the first screen (1,400 x 900), what a reader sees on opening;
- ``report_person.png``: the first listed person of the first attribute, with their values
  opened as a reader would (a click on "this person's values").

It prints the report's size in bytes and the page's height in pixels. Chromium is driven
through its DevTools protocol on a pipe (``--remote-debugging-pipe``): no network, no port.

    FAUX_DATA_DIR=/work/shared/data OMP_NUM_THREADS=1 \\
        python scripts/research/report_screenshots.py [--out docs/figures] [--report PATH]
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "audit.md"
WIDTH, HEIGHT = 1400, 900  # the reader's window
MAX_WIDTH = 1000  # docs/figures' images are at most this wide (tests/test_figures.py)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--remote-debugging-pipe"]


def worked_example(folder: Path) -> Path:
    """Run the worked example's python blocks and its ``faux audit`` command in ``folder``;
    the report's path."""
    text = DOC.read_text()
    start = text.index("## Worked example")
    end = text.find("\n## ", start + 1)
    sec = text[start:end]
    blocks = re.findall(r"^```(\w+)\n(.*?)^```", sec, re.M | re.S)
    for kind, body in blocks:
        if kind == "python":
            name = body.splitlines()[0].lstrip("# ").strip()
            (folder / name).write_text(body)
    train = next(body for kind, body in blocks if kind == "bash" and "faux audit" in body)
    env = {**os.environ, "PYTHONWARNINGS": "ignore::DeprecationWarning"}
    for line in (ln for ln in train.splitlines() if ln.strip()):
        argv = shlex.split(line)
        if argv[0] == "python":
            argv = [sys.executable, *argv[1:]]
        elif argv[:2] == ["faux", "audit"]:
            argv = [sys.executable, "-m", "faux.audit.cli", *argv[1:], "--no-progress"]
        subprocess.run(argv, cwd=folder, env=env, check=True)
    out = re.search(r"--out (\S+)", train).group(1)
    return folder / out / "report.html"


class Chromium:
    """A headless Chromium driven through the DevTools protocol on a pipe (fd 3 commands,
    fd 4 replies, each message JSON ending with a NUL byte)."""

    def __init__(self, binary: str, profile: str):
        to_r, self._to_w = os.pipe()
        self._from_r, from_w = os.pipe()
        os.set_inheritable(to_r, True)
        os.set_inheritable(from_w, True)

        def fds():
            os.dup2(to_r, 3)
            os.dup2(from_w, 4)

        # the child's fds 3 and 4 are set after the fork; close_fds would close them again
        self.proc = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={profile}",
                                      "about:blank"], preexec_fn=fds, close_fds=False,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self._buf, self._id, self.session = b"", 0, None

    def _read(self) -> dict:
        while b"\0" not in self._buf:
            chunk = os.read(self._from_r, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed its pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method: str, **params) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        os.write(self._to_w, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def wait(self, event: str) -> None:
        while self._read().get("method") != event:
            pass

    def open(self, url: str) -> None:
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        self.send("Page.enable")
        self.send("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT,
                  deviceScaleFactor=1, mobile=False)
        self.send("Page.navigate", url=url)
        self.wait("Page.loadEventFired")

    def js(self, expression: str):
        return self.send("Runtime.evaluate", expression=expression,
                         returnByValue=True)["result"].get("value")

    def shot(self, x: float, y: float, w: float, h: float) -> bytes:
        data = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                         clip={"x": x, "y": y, "width": w, "height": h, "scale": 1})["data"]
        return base64.b64decode(data)

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except RuntimeError:
            pass
        self.proc.wait(timeout=30)


def _save(png: bytes, path: Path) -> None:
    """``png`` at most ``MAX_WIDTH`` wide, as a palette PNG (text stays sharp, the file small)."""
    from PIL import Image

    im = Image.open(io.BytesIO(png)).convert("RGB")
    if im.width > MAX_WIDTH:
        im = im.resize((MAX_WIDTH, round(im.height * MAX_WIDTH / im.width)), Image.LANCZOS)
    im.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


RECT = "(() => {{ const r = {}.getBoundingClientRect(); " \
       "return [r.left, r.top + window.scrollY, r.width, r.height]; }})()"


def screenshots(report: Path, out: Path, binary: str) -> dict:
    """The first screen and the first listed person of ``report``; their paths, the page's
    height and the report's size."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        c = Chromium(binary, profile)
        try:
            c.open(report.resolve().as_uri())
            left, _, width, _ = c.js(RECT.format("document.querySelector('.faux')"))
            height = c.js("document.documentElement.scrollHeight")
            first = out / "report_first_screen.png"
            _save(c.shot(left, 0, width, HEIGHT), first)
            person = "document.querySelector('#people-1 ~ .sorter .person:not(.head)')"
            c.js(f"{person}.querySelector('details').open = true")
            _, top, _, _ = c.js(RECT.format("document.getElementById('people-1')"))
            _, p_top, _, p_h = c.js(RECT.format(person))
            shot = out / "report_person.png"
            _save(c.shot(left, top - 8, width, p_top + p_h - top + 16), shot)
        finally:
            c.close()
    return {"first screen": first, "person": shot, "page height (px)": height,
            "report (bytes)": report.stat().st_size}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "figures",
                    help="where the screenshots go (default docs/figures)")
    ap.add_argument("--report", type=Path, default=None,
                    help="an existing report.html instead of the worked example's")
    ap.add_argument("--keep", type=Path, default=None,
                    help="run the worked example in this folder (kept) instead of a "
                    "temporary one")
    ap.add_argument("--chromium", default="/usr/bin/chromium", help="the browser's binary")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        report = args.report
        if report is None:
            folder = args.keep or Path(tmp)
            folder.mkdir(parents=True, exist_ok=True)
            report = worked_example(folder)
        for k, v in screenshots(report, args.out, args.chromium).items():
            print(f"{k}: {v}")


if __name__ == "__main__":
    main()
