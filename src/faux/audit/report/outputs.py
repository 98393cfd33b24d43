"""Where an audit writes, and how: ``out_dir`` must be absent, empty, or an earlier audit's
output (recognised by its marker file ``.faux-audit.json``, which lists the files that audit
wrote); anything else is refused unless ``force``, which writes beside the files already
there. The audit never replaces, renames or deletes a file it did not write. A new folder is
staged in a uniquely named temporary folder beside it and renamed into place at the end, so
a folder of that name is always complete; into an existing one the outputs are staged in a
temporary folder inside it and moved into place file by file only once everything
succeeded. A disk that fills while the outputs are written raises ``OutputError`` (one line:
the folder and the space left there) with nothing left behind. Folders and files are
created with the user's umask.

The JSON files are written atomically through ``faux.harness.files`` with the audit's own
choices: temporaries named ``<name>.*.tmp`` (a concurrent audit recognises and skips them)
and the user's umask; a full disk is an ``OSError`` of the original errno naming the file,
which ``OutputError`` reports."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from faux.audit.interrupts import (
    AuditInterrupted,
    AuditTerminated,
    Terminated,
    check_signals,
    deferred_interrupt,
    interruptible,
)
from faux.audit.report.writing import dir_mode, file_mode, folder_size
from faux.errors import ConfigError, FauxError
from faux.harness.disk import DISK_FULL, disk_full_message
from faux.harness.files import path_kind, write_json_atomic

SUMMARY_SCHEMA = 1  # version of summary.json's layout, also recorded in the marker
MARKER = ".faux-audit.json"  # marks a folder as an audit's output and lists its files
OUTPUT_FILES = ("scores.parquet", "summary.json", "report.html")
STAGING_PREFIX = ".faux-audit.tmp-"  # staging folders inside an existing --out


class OutputError(FauxError, OSError):
    """The disk filled (ENOSPC / EDQUOT) while the outputs were written; nothing was left
    behind. ``str()`` is the one-line message; ``errno`` and ``filename`` are the original's."""

    def __str__(self) -> str:
        return self.strerror



def _marker_files(path: Path) -> set[str] | None:
    """The output files a marker lists (only names the audit writes), or None when ``path``
    is not a marker this audit wrote."""
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if (not isinstance(meta, dict) or not isinstance(meta.get("schema_version"), int)
            or not isinstance(meta.get("files"), list)):
        return None
    return {f for f in meta["files"] if f in OUTPUT_FILES}


def _legacy_output(out: Path, entries: list[str]) -> bool:
    """An output of an audit from before the marker: only its files, with its summary."""
    if "summary.json" not in entries or not set(entries) <= set(OUTPUT_FILES):
        return False
    if not all((out / e).is_file() and not (out / e).is_symlink() for e in entries):
        return False
    try:
        s = json.loads((out / "summary.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(s, dict) and {"settings", "scoring", "gate", "flagged"} <= set(s)


def _ignorable(name: str) -> bool:
    """Staging folders and marker temporaries of audits (this one or a concurrent one)."""
    return name.startswith(STAGING_PREFIX) or (name.startswith(f"{MARKER}.")
                                               and name.endswith(".tmp"))


def _writable_dir(folder: Path, out: Path) -> None:
    try:  # an unnamed temporary file: nothing appears in the folder
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        raise ConfigError(f"cannot write --out {out}: folder {folder} is not writable "
                          f"({err.strerror or err}); pass a folder you can write") from err


def inspect_out(out: Path, files, force: bool) -> set[str] | None:
    """Check that the audit may write ``files`` into ``out``. Returns None when ``out`` does
    not exist yet, else the files there that an earlier audit wrote (it may replace them)."""
    try:
        return _inspect_out_unchecked(out, files, force)
    except OSError as err:  # a folder on the way that cannot be read
        raise ConfigError(f"cannot write --out {out}: {err.strerror or err} "
                          f"({err.filename or out}); pass a folder you can write") from err


def _inspect_out_unchecked(out: Path, files, force: bool) -> set[str] | None:
    kind = path_kind(out)
    if kind in ("a broken symbolic link", "a symbolic link that loops"):
        raise ConfigError(f"--out {out} is {kind}; pass a folder path")
    if kind not in ("a folder", "not found"):
        raise ConfigError(f"--out {out} is {kind}; pass a folder path (new, empty, or an "
                          "earlier audit's output)")
    if not out.exists():
        anc = out.parent
        while not anc.exists() and not anc.is_symlink() and anc != anc.parent:
            anc = anc.parent
        if not anc.is_dir():
            raise ConfigError(f"cannot write --out {out}: {anc} is a file, not a folder; pass "
                              "a folder path")
        _writable_dir(anc, out)
        return None
    _writable_dir(out, out)
    entries = sorted(e for e in os.listdir(out) if not _ignorable(e))
    owned: set[str] = set()
    if MARKER in entries:
        listed = _marker_files(out / MARKER)
        if listed is None:
            raise ConfigError(f"--out {out} holds a {MARKER} the audit did not write; move it "
                              "or pass another folder")
        owned = {f for f in listed if f in entries}
    elif _legacy_output(out, entries):
        owned = set(entries)
    elif entries and not force:
        shown = ", ".join(entries[:5]) + (f" and {len(entries) - 5} more" if len(entries) > 5
                                          else "")
        raise ConfigError(f"--out {out} holds files the audit did not write ({shown}); pass a "
                          "new or empty folder, or --force to write beside them (they are "
                          "never replaced or deleted)")
    mine = set(owned) | ({MARKER} if MARKER in entries else set())
    clash = [f for f in [*files, MARKER] if f in entries and f not in mine]
    if clash:
        raise ConfigError(f"--out {out} already holds {', '.join(clash)}, which the audit did "
                          "not write and never replaces; move it or pass another folder")
    return owned


def _write_json_atomic(path: Path, obj) -> None:
    """``obj`` as JSON at ``path`` (``faux.harness.files.write_json_atomic``), the temporary
    file named ``<name>.*.tmp`` (a concurrent audit skips it) and the file given the user's
    umask, as ``open()`` would create it."""
    write_json_atomic(path, obj, mode=file_mode(), prefix=f"{path.name}.")


@contextmanager
def _suppress_oserror():
    try:
        yield
    except OSError:
        pass


def _marker(files) -> dict:
    return {"schema_version": SUMMARY_SCHEMA, "written_by": "faux audit",
            "files": sorted(files)}


class Staging:
    """Where the outputs are written while the audit runs, and what the audit created."""

    def __init__(self, out: Path, files, force: bool):
        self.out, self.files, self.force = out, list(files), force
        self.created: list[Path] = []  # folders the audit made (removed if it fails)
        if inspect_out(out, self.files, force) is None:
            missing = []
            p = out.parent
            while not p.exists():
                missing.append(p)
                p = p.parent
            self.dir = None
            try:
                for p in reversed(missing):
                    p.mkdir()
                    self.created.append(p)
                # renamed to --out at the end: made with the mode mkdir gives a new folder
                self._make_dir(out.parent, f".{out.name}.tmp-")
            except BaseException:
                self.discard()
                raise
        else:
            self.dir = None
            try:
                self._make_dir(out, STAGING_PREFIX)
            except BaseException:
                self.discard()
                raise

    def _make_dir(self, parent: Path, prefix: str) -> None:
        """A new folder ``parent/prefix<random>``, named in ``self.dir`` before it exists: a
        signal that lands while it is made leaves nothing ``discard`` cannot find (the name
        is fresh, so a folder found under it is this audit's)."""
        while True:
            self.dir = parent / f"{prefix}{secrets.token_hex(4)}"
            try:
                self.dir.mkdir(mode=0o700)
                break
            except FileExistsError:
                self.dir = None  # another's folder: never discarded
                continue
        os.chmod(self.dir, dir_mode())

    def size(self) -> int:
        """Bytes written into the staging folder so far."""
        return 0 if self.dir is None else folder_size(self.dir)

    def discard(self) -> None:
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
        for p in reversed(self.created):
            with _suppress_oserror():
                p.rmdir()  # only if still empty


@contextmanager
def _folder_lock(folder: Path):
    """An exclusive lock on ``folder`` (flock) while outputs are moved into place, so that
    concurrent audits into one folder finish one after the other."""
    fd = None
    try:
        import fcntl

        fd = os.open(folder, os.O_RDONLY)
        fcntl.flock(fd, fcntl.LOCK_EX)
    except (ImportError, OSError):
        pass
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)




def _written_last(folder: Path | None) -> Path | None:
    """The file under ``folder`` modified last (None: none, or it cannot be read)."""
    try:
        files = [p for p in folder.iterdir() if p.is_file()] if folder else []
        return max(files, key=lambda p: p.stat().st_mtime_ns) if files else None
    except OSError:
        return None


def disk_full(err: BaseException, staging: Staging | None):
    """For ``err`` a full disk met while ``staging`` was written, a function that returns
    its one-line error (else None). Call this before the staging folder is discarded (it
    reads the bytes staged and, when ``err`` does not name the file being written, as
    pyarrow's errors do not, the staged file written last), the function after (the free
    space it reports is then what the user has)."""
    if (staging is None or not isinstance(err, OSError) or isinstance(err, FauxError)
            or err.errno not in DISK_FULL):
        return None
    staged, last = staging.size(), _written_last(staging.dir)
    return lambda: disk_full_error(err, staging, staged, last)


def disk_full_error(err: OSError, staging: Staging, staged: int,
                    last: Path | None = None) -> OutputError:
    """The one-line error of a disk that filled while ``staging`` was written: it names the
    output folder (not the staging folder, removed before the error is raised) and the file
    being written (``err``'s, else ``last``)."""
    name = err.filename
    path = last if name is None else Path(os.path.abspath(os.fsdecode(name)))
    if path is None or any(path.is_relative_to(d) for d in (staging.dir, staging.out) if d):
        what = "" if path is None else path.name
        msg = disk_full_message(staging.out, what=what, staged=staged)
    else:  # outside the outputs (a library's temporary file)
        msg = disk_full_message(name)
    return OutputError(err.errno, msg, name)


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj


def write_staged(result, tmp: Path, report: bool) -> None:
    """Write summary.json and report.html (and scores.parquet when scored in memory) into
    the staging folder ``tmp``."""
    summary = dict(result.summary)
    summary["top_flagged"] = [
        {"row_id": int(r.row_id), "score": float(r.score), "group": r.group,
         "top_features": [{"feature": f, "contribution": v} for f, v in r.top_features]}
        for r in result.top_flagged.itertuples()]
    summary["feature_ranking"] = result.feature_ranking
    if not (tmp / "scores.parquet").exists() and result.scores is not None:
        result.scores.to_parquet(tmp / "scores.parquet", index=False)
    with open(tmp / "summary.json", "w") as f:
        json.dump(_jsonable(summary), f, indent=2)
    if report:
        from faux.audit.report.page import write_report

        write_report(result, tmp / "report.html")


def _replace(src: Path, dst: Path) -> None:
    """``os.replace``, also for a folder (the Ray engine's scores.parquet) or over one: the
    earlier output moves into the staging folder (removed with it) and the new one in."""
    if not src.is_dir() and not (dst.is_dir() and not dst.is_symlink()):
        os.replace(src, dst)
        return
    if dst.exists() or dst.is_symlink():
        os.rename(dst, src.parent / f".replaced-{dst.name}")
    os.rename(src, dst)


def move_into_place(staging: Staging) -> None:
    """Move the staged outputs into place. A new folder: the staging folder is renamed to
    it. An existing one (empty, an earlier output, or --force): checked again, then its
    marker lists the old and the new files, each file is moved in (atomically), the earlier
    audit's files this run did not write are removed, and the marker lists the new files.
    """
    tmp, out = staging.dir, staging.out
    new = sorted(p.name for p in tmp.iterdir())
    check_signals()
    with _folder_lock(out.parent), deferred_interrupt():
        if tmp.parent == out.parent and not out.exists() and not out.is_symlink():
            _write_json_atomic(tmp / MARKER, _marker(new))
            try:
                os.rename(tmp, out)
                return
            except OSError:  # another writer made the folder meanwhile: join it below
                (tmp / MARKER).unlink()
        owned = inspect_out(out, new, staging.force) or set()
        _write_json_atomic(out / MARKER, _marker(owned | set(new)))
        for f in new:
            _replace(tmp / f, out / f)
        for f in owned - set(new):  # an earlier audit's file this one did not write
            with _suppress_oserror():
                (out / f).unlink()
        with _suppress_oserror():  # the outputs are in place; the marker above lists them
            _write_json_atomic(out / MARKER, _marker(new))
        shutil.rmtree(tmp, ignore_errors=True)


def save_result(result, out_dir, *, force: bool = False, report: bool = True) -> Path:
    """``AuditResult.save``: the result's outputs into ``out_dir`` under the rules above."""
    files = [f for f in OUTPUT_FILES if report or f != "report.html"]
    out = Path(os.path.abspath(out_dir))
    with interruptible():
        try:
            staging = Staging(out, files, force)
            try:
                if result.scores is not None:
                    result.scores.drop(columns=["group"], errors="ignore").to_parquet(
                        staging.dir / "scores.parquet", index=False)
                write_staged(result, staging.dir, report)
                move_into_place(staging)
            except BaseException as err:
                full = disk_full(err, staging)
                staging.discard()
                if full is not None:
                    raise full() from err
                raise
        except AuditTerminated:
            raise Terminated from None
        except AuditInterrupted:
            raise KeyboardInterrupt from None
    result.out_dir = Path(out_dir)
    return result.out_dir
