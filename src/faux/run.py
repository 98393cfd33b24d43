"""Hydra entry point: ``python -m faux.run [overrides]``; one job = one cell of a table.

Hydra stays here: the config is resolved to plain dicts, the study of ``cfg.job``
(``faux.studies.get``) builds its settings from them (``Settings.from_config``) and runs
(``run(settings, out_dir: Path, log) -> dict`` of metrics).
Each job writes ``result.json`` (config, config hash, data checksum, metrics, timings) into
its folder, with fsync and an atomic rename, before any logger runs: a logger that fails
(W&B without network, a full disk under its folder) is reported in one line and never loses
the result. A job whose folder already holds a finished ``result.json`` with the same config
hash is skipped, so rerunning an interrupted sweep into the same folder completes only what is
missing. The hash covers the resolved config (less paths and logging; Hydra's own settings,
the launcher among them, are not in it) and the checksum of the data files the job names
(PMLB / real datasets under the data root), so the same sweep over a changed data root
reruns. A job that reruns first renames the old ``result.json`` to ``result.stale.json``: a
rerun that crashes never leaves an old result looking current.

Job folders of a multirun are named by :func:`job_dir_name` (``hydra.sweep.subdir`` in
conf/hydra/default.yaml): a hash of the job's own overrides, not its number, so a sweep with
other parameters into the same folder never overwrites another cell's result, and the same
command finds the same folders (resume).

Before the study runs, :func:`validate` checks what can be checked without training
(every numeric harness value of ``faux.harness_validate.RULES``, synthetic column options,
method names); a bad value is a one-line error, exit 2. The harness table is also checked in
the launching process before anything is written (:class:`SweepGuard`, a Hydra callback of
conf/harness.yaml: the config, and each swept value of a sweep's jobs).

Two launches into one sweep folder: every write has a temporary name of its own
(:func:`write_json_atomic`: ``tempfile.mkstemp`` beside the target), and the launching
process holds ``<sweep dir>/.sweep.lock`` (``flock``) while its sweep runs, so a second
launch says so in one line, waits, and then finds the first one's results (skipped).

Ctrl-C (:func:`main`): one line on stderr, the jobs finished and how to resume (rerun the
same command: finished jobs are reused), exit 130, no traceback. ``main`` also sets
``RAY_USAGE_STATS_ENABLED=0`` unless it is set (the Ray launcher attaches from this process).
"""

from __future__ import annotations

from faux.kernels import pin as _pin_kernels

# one CPU kernel set on every machine, before anything imports torch (faux.kernels); the
# processes the launchers start inherit it
_pin_kernels()

import hashlib
import json
import logging
import os
import re
import signal
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import hydra
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from faux.errors import FauxError

log = logging.getLogger("faux.run")

# conf/hydra/launcher/<name>.yaml sets faux's values of a launcher plugin's config and Hydra
# merges it onto the plugin's config of the same name (hydra/launcher=<name>), warning that
# this merge is deprecated (it is what the plugins' docs select; Hydra 1.3 keeps it)
warnings.filterwarnings("ignore", message=r"\s*'hydra/launcher/\w+' is validated against "
                        r"ConfigStore schema", category=UserWarning)


def register_resolvers() -> None:
    """``${faux_methods:}``: the registered method names, comma-separated (Table 1's sweep
    list in conf/experiment/table1.yaml reads the registry through it)."""
    if not OmegaConf.has_resolver("faux_methods"):
        def methods() -> str:
            from faux.methods import registry

            return ",".join(registry.names())

        OmegaConf.register_new_resolver("faux_methods", methods)
    if not OmegaConf.has_resolver("faux_job_dir"):
        def job_dir(*, _root_) -> str:
            task = OmegaConf.select(_root_, "hydra.overrides.task", default=None) or []
            return job_dir_name(OmegaConf.to_container(task) if not isinstance(task, list)
                                else task)

        OmegaConf.register_new_resolver("faux_job_dir", job_dir)


#: overrides that do not change what a job computes (left out of its folder name); the
#: launcher is a Hydra override (``hydra/launcher=``, never a task override), and ``launcher``
#: is its former group, still named in older sweeps' overrides
_DIR_VOLATILE = ("logger", "launcher")


def job_key(overrides) -> tuple[str, ...]:
    """A job's identity in a sweep: its overrides, sorted, less logger/launcher choices."""
    out = []
    for o in overrides or []:
        key = str(o).split("=", 1)[0].lstrip("+~")
        if key.split(".")[0] not in _DIR_VOLATILE:
            out.append(str(o))
    return tuple(sorted(out))


def job_dir_name(overrides) -> str:
    """The folder of a multirun job: ``j`` + 12 hex of the hash of :func:`job_key` (the
    same overrides in any order give the same folder; other overrides another one)."""
    blob = json.dumps(list(job_key(overrides))).encode()
    return "j" + hashlib.sha256(blob).hexdigest()[:12]


register_resolvers()

#: config keys that do not change what a job computes (left out of the config hash)
_VOLATILE = ("paths", "hydra", "logger", "trainer.accelerator")

#: profile sections read by one job only; other jobs leave them out of their hash, so adding
#: or changing a study's section does not make every other study's sweep rerun
_STUDY_SECTIONS = {"real": "real_cell", "fig5": "fig5_cell", "fig11": "fig11_cell"}


def plain_config(cfg: DictConfig) -> dict:
    """The resolved config as plain containers, without Hydra's own node."""
    return OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)


def config_hash(cfg: dict, data_sha256: str | None = None) -> str:
    """A stable hash of what the job computes: the config less paths and logging, the
    profile sections of other studies and, for a one-method job, the keys only other methods
    read (``faux.studies.config.foreign_keys``), and the checksum of the data files it reads."""
    c = json.loads(json.dumps(cfg, default=str))
    if data_sha256 is not None:
        c["__data_sha256__"] = data_sha256
    for key in _VOLATILE:
        node, *rest = key.split(".")
        if rest and isinstance(c.get(node), dict):
            c[node].pop(rest[0], None)
        elif not rest:
            c.pop(node, None)
    profile = c.get("profile")
    if isinstance(profile, dict):
        for section, owner in _STUDY_SECTIONS.items():
            if c.get("job") != owner:
                profile.pop(section, None)
    if isinstance(c.get("method"), str):       # a one-method job: other methods' keys out
        from faux.methods import registry
        from faux.studies.config import foreign_keys

        if c["method"] in registry.names():
            for key in foreign_keys(c["method"]):
                _pop_dotted(c, key)
    blob = json.dumps(c, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def _pop_dotted(c: dict, key: str) -> None:
    *parents, last = key.split(".")
    for p in parents:
        c = c.get(p) if isinstance(c, dict) else None
    if isinstance(c, dict):
        c.pop(last, None)


_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def _strings(node) -> set[str]:
    if isinstance(node, dict):
        return set().union(*(_strings(v) for v in node.values())) if node else set()
    if isinstance(node, list):
        return set().union(*(_strings(v) for v in node)) if node else set()
    return {node} if isinstance(node, str) and _NAME.match(node) else set()


def job_data_files(plain: dict) -> list[Path]:
    """The data files a job may read: for every string value of its config (paths, hydra and
    logging left out) that names a PMLB dataset or a real dataset, its file(s) under the
    data root (``paths.data_dir``) that exist. Over-inclusive by design: a file is never
    missed; naming one more costs at most a rerun."""
    from faux.data.pmlb_data import pmlb_path
    from faux.data.real import REAL_DATASETS, raw_paths

    root = (plain.get("paths") or {}).get("data_dir")
    names = _strings({k: v for k, v in plain.items() if k not in _VOLATILE})
    files: list[Path] = []
    for name in sorted(names):
        p = pmlb_path(name, root)
        if p.is_file():
            files.append(p)
        if name in REAL_DATASETS:
            files += [q for q in raw_paths(name, root) if q.exists()]
    return files


def data_sha256(plain: dict) -> str | None:
    """:func:`faux.cache.data_checksum` of :func:`job_data_files` (None: the job names none)."""
    from faux.cache import data_checksum

    files = job_data_files(plain)
    return data_checksum(files) if files else None


def validate(plain: dict) -> None:
    """Checks that need no training, run before the study: every numeric harness value
    (``faux.harness_validate.RULES``: seed, sizes, epochs, steps, rates), a synthetic job's
    column options (``faux.synth.sampler.check_synthetic_options``: datasets, bias, fusion,
    decoding, tau) and its method name (the registry). Raises a one-line ConfigError."""
    from faux import harness_validate
    from faux.errors import ConfigError

    harness_validate.check(plain)

    column = plain.get("column")
    columns = plain.get("columns")
    if isinstance(column, str) and isinstance(columns, dict):
        if column not in columns:
            raise ConfigError(f"unknown column {column!r}; choose one of {', '.join(columns)}")
        column = columns[column]
    if isinstance(column, dict) and {"xc", "xy"} <= set(column):
        from faux.synth.sampler import check_synthetic_options

        known = ("xc", "xy", "bias", "fusion")          # the fields of studies.column.Column
        extra = sorted(set(column) - set(known))
        if extra:
            raise ConfigError(f"unknown column option(s) {extra}; a column has "
                              f"{', '.join(known)}")
        opts = {k: column[k] for k in known if k in column}
        if "bias" not in opts or "fusion" not in opts:
            raise ConfigError(f"column {column} needs bias and fusion")
        check_synthetic_options(root=(plain.get("paths") or {}).get("data_dir"), **opts)
        method = plain.get("method")
        if method is not None:
            from faux.methods import registry

            registry.check_names([method], "method")


def finished(out_dir: Path, chash: str) -> dict | None:
    """The stored result of a finished job with this config hash, else None."""
    path = out_dir / "result.json"
    try:
        res = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ok = res.get("config_hash") == chash and res.get("status") == "ok"
    # a job that skipped (e.g. a dataset the user has not placed yet) is retried on rerun
    skipped = isinstance(res.get("metrics"), dict) and res["metrics"].get("skipped")
    return res if ok and not skipped else None


def write_json_atomic(path: Path, obj: dict) -> None:
    """Write ``obj`` to a temporary file of its own (``tempfile.mkstemp`` in the same folder:
    two processes writing one path never share it), fsync it, rename it over ``path``, fsync
    the folder: after a crash ``path`` holds the old or the new content, never a part, and of
    two concurrent writers the last rename wins whole."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(obj, indent=2, default=float))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)       # mkstemp makes 0600; results are read by other users
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    try:
        dfd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def config_yaml_key(path: Path, data_sha256: str | None) -> dict:
    """The cache key of a job folder's config hash: the bytes of its ``.hydra/config.yaml``,
    the data checksum, the faux code (read by ``faux.reports.sweep.stored_config_hash``)."""
    import hashlib

    from faux.cache import package_version

    return {"config_yaml": hashlib.sha256(Path(path).read_bytes()).hexdigest(),
            "data": data_sha256, "code": package_version()}


def remember_config_hash(out_dir: Path, data_sha256: str | None, chash: str,
                         cache_dir=None) -> bool:
    """Record the hash this job computed for the ``.hydra/config.yaml`` Hydra wrote for it, so
    that the aggregation need not resolve the file again (``stored_config_hash`` reads the
    entry). Called once the result is written, so a config refused before training leaves
    the cache untouched; a config.yaml edited later has other bytes and is resolved afresh.
    False (nothing written) for a job run without Hydra's wrapper (no such file)."""
    path = Path(out_dir) / ".hydra" / "config.yaml"
    if not path.is_file():
        return False
    from faux.cache import Cache, json_dumps, json_loads

    Cache(cache_dir).get_or_build("config_hash", config_yaml_key(path, data_sha256),
                                  lambda: chash, dumps=json_dumps, loads=json_loads)
    return True


def mark_stale(out_dir: Path) -> Path | None:
    """Rename a previous ``result.json`` to ``result.stale.json`` (a rerun is starting)."""
    old = out_dir / "result.json"
    if not old.exists():
        return None
    stale = out_dir / "result.stale.json"
    os.replace(old, stale)
    log.info("previous result of another config moved to %s", stale)
    return stale


def run_labels(plain: dict) -> dict:
    """The keys a dashboard groups a job by: study (task name), column or dataset, method,
    reading and profile (those the job has). A logged job carries them as config
    ``by.<key>`` and as tags ``<key>:<value>``."""
    def name_of(v):
        return v.get("name") if isinstance(v, dict) else v

    labels = {"study": plain.get("task_name"), "job": plain.get("job"),
              "column": plain.get("column") if isinstance(plain.get("column"), str) else None,
              "dataset": name_of(plain.get("data")), "method": plain.get("method"),
              "reading": name_of(plain.get("reading")), "profile": name_of(plain.get("profile")),
              "seed": plain.get("seed")}
    if labels["column"] is not None and plain.get("job") != "summary":
        labels["dataset"] = None          # a synthetic column: the column names the data
    return {k: v for k, v in labels.items() if v is not None and not isinstance(v, dict)}


def _make_logger(cfg: DictConfig):
    if "logger" not in cfg or cfg.logger is None:
        return None
    return hydra.utils.instantiate(cfg.logger)


def execute(cfg: DictConfig) -> dict:
    """Run one job for a composed config (what ``main`` does, without Hydra's wrapper)."""
    from faux import harness_validate, studies

    plain = plain_config(cfg)
    harness_validate.check(plain)       # before the folder is touched (nothing marked stale)
    out_dir = Path(cfg.paths.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = data_sha256(plain)
    chash = config_hash(plain, data)
    done = finished(out_dir, chash)
    if done is not None:
        log.info("job already finished (config %s) in %s: skipped", chash, out_dir)
        return done
    mark_stale(out_dir)
    if cfg.job not in studies.MEMO_JOBS:
        validate(plain)
        result = _compute(cfg, plain, chash, data)
        reused = None
    else:
        # an identical job (same config hash, same faux code) of any sweep folder: its result
        # from the cache, computed once (a parallel twin waits on the key's lock); a hit
        # returns before torch or Lightning is imported, a bad config fails before it
        # touches the cache (no result can exist for it)
        from faux.cache import Cache, json_dumps, json_loads

        cache = Cache((plain.get("paths") or {}).get("cache_dir"))
        key = memo_key(chash)
        if not cache.path("results", key).exists():
            validate(plain)
        result = cache.get_or_build("results", key, lambda: _compute(cfg, plain, chash, data),
                                    dumps=json_dumps, loads=json_loads)
        reused = str(cache.path("results", key)) if cache.builds == 0 else None
        result = {**result, "config": plain, **({"reused_from": reused} if reused else {})}
    write_json_atomic(out_dir / "result.json", result)
    remember_config_hash(out_dir, data, chash, (plain.get("paths") or {}).get("cache_dir"))
    if reused:
        log.info("same job (config %s, same code) already computed: result reused from %s",
                 chash, reused)
    else:
        log_to_logger(cfg, plain, chash, result["metrics"], result["timings"]["wall_s"])
    return result


def _compute(cfg: DictConfig, plain: dict, chash: str, data: str | None) -> dict:
    """Run the job's study (its config validated): the result (status, hash, config, metrics,
    time)."""
    import pytorch_lightning as pl
    import torch

    from faux import studies

    study = studies.get(cfg.job)
    torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1"))))
    pl.seed_everything(int(cfg.seed), workers=True, verbose=False)
    t0 = time.perf_counter()
    metrics = study.run(study.Settings.from_config(plain), Path(cfg.paths.output_dir), log.info)
    wall = time.perf_counter() - t0
    return {"status": "ok", "job": cfg.job, "config_hash": chash, "data_sha256": data,
            "config": plain, "metrics": metrics, "timings": {"wall_s": wall}}


def memo_key(chash: str) -> dict:
    """The cache key of a memoised job result (``studies.MEMO_JOBS``: jobs whose whole output
    is result.json): its config hash and a hash of every faux source file, so a rerun under
    other overrides reuses it and no entry outlives a code change."""
    from faux.cache import package_version

    return {"config_hash": chash, "code": package_version()}


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def scalar_metrics(metrics: dict) -> dict:
    """What a logger gets of a job's metrics: its numbers, and the mean of each list of
    numbers (``ap_runs`` -> ``ap_mean``: one value per job a dashboard can chart)."""
    out = {k: v for k, v in metrics.items() if _number(v)}
    for k, v in metrics.items():
        if isinstance(v, list) and v and all(_number(x) for x in v):
            out.setdefault(k.removesuffix("_runs") + "_mean", sum(v) / len(v))
    return out


def log_to_logger(cfg: DictConfig, plain: dict, chash: str, metrics: dict, wall: float) -> bool:
    """Send the job's config, labels and scalar metrics to the configured logger; a failure
    is one line on stderr (the result is already written). True when logged."""
    logger = None
    try:
        logger = _make_logger(cfg)
        if logger is None:
            return False
        labels = run_labels(plain)
        scalars = scalar_metrics(metrics)
        # labels under ``by.`` (``study``, ``profile``, ``reading`` are config nodes too)
        logger.log_hyperparams({"config_hash": chash, **{f"by.{k}": v for k, v in labels.items()},
                                **_flatten(plain)})
        if type(logger).__name__ == "WandbLogger":
            run = logger.experiment
            run.tags = tuple(dict.fromkeys([*(run.tags or ()),
                                            *(f"{k}:{v}" for k, v in labels.items())]))
        logger.log_metrics({**scalars, "wall_s": wall})
        logger.finalize("success")
        return True
    except Exception as exc:
        detail = str(exc).splitlines()[0][:160] if str(exc) else ""
        print(f"warning: logger {type(logger).__name__ if logger else cfg.logger.get('_target_')}"
              f" failed ({type(exc).__name__}: {detail}); the result is in "
              f"{cfg.paths.output_dir}/result.json", file=sys.stderr)
        return False
    finally:
        if logger is not None and type(logger).__name__ == "WandbLogger":
            try:
                import wandb

                wandb.finish()
            except Exception:
                pass


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        elif isinstance(v, (int, float, str, bool)) or v is None:
            out[key] = v
        else:
            out[key] = str(v)
    return out


# --------------------------------------------------------------------------- sweep guard
#: the lock file of a sweep folder (``fcntl.flock``; held by the launching process)
SWEEP_LOCK = ".sweep.lock"

#: the sweep this process launched (for the resume hint after Ctrl-C)
_SWEEP: dict = {}

#: the top-level config keys ``faux.harness_validate.RULES`` reads
_CHECKED = ("seed", "gan_seed", "draw", "profile", "reading", "synthetic", "model", "real_study",
            "fig8")


def lock_sweep_dir(sweep_dir: Path, stream=None):
    """Hold ``<sweep_dir>/.sweep.lock`` for this process (exclusive ``flock``; the open file
    is returned, the lock goes with it or with the process). A second launch into the same
    folder waits here, after one line on ``stream`` (stderr) naming the holder's pid; its
    jobs then find the first launch's results and skip them."""
    import fcntl

    sweep_dir = Path(sweep_dir)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    fh = open(sweep_dir / SWEEP_LOCK, "a+")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.seek(0)
        holder = fh.read().strip() or "?"
        print(f"waiting: another sweep (pid {holder}) is running in {sweep_dir}; this one "
              f"starts when it ends and reuses its finished jobs",
              file=stream or sys.stderr, flush=True)
        fcntl.flock(fh, fcntl.LOCK_EX)
    fh.seek(0)
    fh.truncate()
    fh.write(f"{os.getpid()}\n")
    fh.flush()
    return fh


def _sections(config: DictConfig) -> dict:
    """The resolved parts of ``config`` that the harness table checks (a part that does not
    resolve here is left to the job, which resolves it again)."""
    out = {}
    for key in _CHECKED:
        if key not in config:
            continue
        try:
            node = config[key]
            out[key] = (OmegaConf.to_container(node, resolve=True)
                        if isinstance(node, DictConfig) else node)
        except Exception:
            continue
    return out


def check_launch(config: DictConfig, sweep: bool) -> None:
    """The harness table over the launch's config and, for a sweep, over every swept value
    of its expanded jobs (``seed=-1,0``). Raises a one-line ConfigError."""
    from faux import harness_validate

    harness_validate.check(_sections(config))
    if not sweep:
        return
    from faux.progress import expand_sweep

    jobs, _ = expand_sweep(config)
    texts = sorted({o for job in jobs or [] for o in job})
    if not texts:
        return
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides(texts)
    except Exception:          # Hydra reports a malformed override itself
        return
    for o in parsed:
        if o.is_sweep_override() or o.is_delete():
            continue
        try:
            value = o.value()
        except Exception:
            continue
        harness_validate.check_override(o.key_or_group, value)


class SweepGuard(Callback):
    """Hydra callback (``conf/harness.yaml``, before the progress display), in the
    launching process: :func:`check_launch` before a run or a sweep starts (a bad value is
    ``error: <key>=<value>: <expected>`` on stderr, exit 2, nothing written, no job run);
    :func:`lock_sweep_dir` on the sweep folder until the sweep ends; in each job's process,
    Ctrl-C as :class:`Interrupted` (:func:`install_interrupt_handler`)."""

    def __init__(self) -> None:
        self._lock = None

    def __getstate__(self):
        # travels to joblib/Ray/submitit workers inside Hydra's context; the lock stays here
        state = dict(self.__dict__)
        state["_lock"] = None
        return state

    def _check(self, config: DictConfig, sweep: bool) -> None:
        try:
            check_launch(config, sweep)
        except FauxError as exc:
            # Hydra turns a callback's exception into a warning and goes on; SystemExit is
            # not an Exception, so it stops the launch here
            print(f"error: {exc}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None

    def on_run_start(self, config: DictConfig, **kwargs) -> None:
        self._check(config, sweep=False)

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        self._check(config, sweep=True)
        sweep_dir = Path(str(config.hydra.sweep.dir))
        raw = OmegaConf.to_container(config.hydra.sweep, resolve=False).get("dir", "")
        _SWEEP.update(dir=sweep_dir, fixed="${now:" not in str(raw))
        self._lock = lock_sweep_dir(sweep_dir)

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        if self._lock is not None:
            self._lock.close()          # closing the file releases the flock
            self._lock = None

    def on_job_start(self, config: DictConfig, **kwargs) -> None:
        install_interrupt_handler()


# --------------------------------------------------------------------------- interrupts
class Interrupted(BaseException):
    """Ctrl-C in a faux process. Not a KeyboardInterrupt: Lightning's ``fit`` turns that into
    ``sys.exit(1)`` and ignores further Ctrl-C; this one it tears down and re-raises."""


_interrupts = 0


def _on_sigint(signum, frame) -> None:
    global _interrupts
    _interrupts += 1
    if _interrupts > 1:             # a second Ctrl-C while the first unwinds: leave at once
        os._exit(130)
    raise Interrupted()


def install_interrupt_handler() -> bool:
    """Ctrl-C raises :class:`Interrupted` in this process (main thread, where Python's
    default handler is still set). True when installed."""
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return False
    signal.signal(signal.SIGINT, _on_sigint)
    return True


def interrupt_message() -> str:
    """The one line printed on Ctrl-C: what finished, and how to resume."""
    from faux import progress

    counts = progress.stop_for_interrupt()
    head = "interrupted"
    if counts is not None:
        done, total = counts
        head += f" after {done}/{'?' if total is None else total} jobs"
    if _SWEEP:
        again = ("rerun the same command" if _SWEEP.get("fixed")
                 else f"rerun the same command with hydra.sweep.dir={_SWEEP['dir']}")
        return f"{head}; {again} to resume (finished jobs are reused)"
    return f"{head}; rerun the same command to resume (models already built are reused)"


# --------------------------------------------------------------------------- entry point
def task(cfg: DictConfig) -> None:
    """One job (Hydra's task function): :func:`execute`; a FauxError is one line, exit 2."""
    try:
        execute(cfg)
    except FauxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)


#: conf/ of this checkout (an absolute path: Hydra finds it whether this file runs as
#: ``__main__`` or as ``faux.run``)
CONF_DIR = Path(__file__).resolve().parents[2] / "conf"

_hydra_main = hydra.main(version_base="1.3", config_path=str(CONF_DIR),
                         config_name="config")(task)


_OLD_LAUNCHER = re.compile(r"^[+~]*launcher=")


def old_launcher_override(args: list[str]) -> str | None:
    """One line for an override of the removed ``launcher`` group (the launchers are Hydra's
    own group now: ``hydra/launcher=<name>``), else None."""
    for a in args:
        if _OLD_LAUNCHER.match(a):
            name = a.split("=", 1)[1]
            return (f"error: {a}: the launcher group is Hydra's own now; "
                    f"use hydra/launcher={name}")
    return None


def main() -> None:
    """``python -m faux.run [overrides]``: Hydra's main, with Ctrl-C as one line and the
    resume hint on stderr (exit 130, no traceback), and Ray's usage statistics off unless
    ``RAY_USAGE_STATS_ENABLED`` is set (the Ray launcher attaches from this process). An
    override of the removed ``launcher`` group is one line, exit 2."""
    old = old_launcher_override(sys.argv[1:])
    if old:
        print(old, file=sys.stderr)
        sys.exit(2)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    install_interrupt_handler()
    try:
        _hydra_main()
    except (Interrupted, KeyboardInterrupt):
        print(interrupt_message(), file=sys.stderr, flush=True)
        sys.exit(130)


if __name__ == "__main__":
    # run the imported module's main, so that the callbacks Hydra instantiates
    # (``faux.run.SweepGuard``) and this entry point share one copy of this module's state
    from faux.run import main as _main

    _main()
