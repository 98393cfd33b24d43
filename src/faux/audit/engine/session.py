"""The Ray the engine runs on: the cluster at ``RAY_ADDRESS`` when it is set (checked to
answer within ``CONNECT_TIMEOUT_S`` seconds first: one line, exit 2, otherwise), else a local
Ray started with this machine's cores (its files under ``TEMP_DIR``, a short path: Ray's
socket paths must stay under the system's 107 characters), or the Ray this process already
runs (``ray.init`` called by the caller), which is left running. A Ray the audit started
is shut down when the audit ends, however it ends, and its actors with it.

The actors: ``workers`` scoring ones (default: the cluster's CPUs), each asking Ray for at
most one CPU and together for at most the cluster's (they read their rows themselves; no
other task of the pass needs a CPU)."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import numbers
import os
import signal
import socket
import threading
from dataclasses import dataclass
from typing import Any

from faux.audit.engine.dataset import Files
from faux.errors import ConfigError

CONNECT_TIMEOUT_S = 10.0
TEMP_DIR = "/tmp/faux-ray"
#: ``RAY_ADDRESS`` values that name no host to check (Ray finds the cluster itself)
NO_HOST = ("auto", "local")


@dataclass(frozen=True)
class RaySession:
    """The Ray an audit runs its pass on: the data's ``files``, the actors (``workers``,
    each asking for ``cpus``), which Ray (``where``: a local one the audit started, the
    cluster at RAY_ADDRESS, or the one this process already ran) and whether the audit
    started it (``started``: then ``stop`` shuts it down)."""

    files: Files
    workers: int
    cpus: float
    where: str
    started: bool
    ray_pass: Any = None

    def score_all(self, state, reading, *, n_rows: int, seed: int, keep: bool, out, bar):
        """The pass over every row on Ray (``faux.audit.engine.ray_pass``); the arguments
        and result of ``faux.audit.passes.score_pass.score_all``."""
        from faux.audit.engine.ray_pass import score_on_ray

        return score_on_ray(self, state, reading, n_rows=n_rows, seed=seed, out=out,
                            bar=bar)

    def describe(self) -> dict:
        return {"name": "ray", "workers": self.workers, "ray": self.where}

    def stop(self) -> None:
        """The pass's pipeline stopped, and the Ray the audit started shut down (its actors
        and processes with it)."""
        if self.ray_pass is not None:
            self.ray_pass.close()
        if self.started:
            import ray

            with _handlers_kept():
                ray.shutdown()


def check_settings(engine, workers, engines) -> None:
    """The settings ``engine`` (one of ``engines``) and ``workers``, one line each."""
    if engine not in engines:
        raise ConfigError(f"engine (--engine) must be one of {', '.join(engines)}, got "
                          f"{engine!r}")
    if workers is None:
        return
    if isinstance(workers, bool) or not isinstance(workers, numbers.Integral) or workers < 1:
        raise ConfigError(f"workers (--workers) must be a positive integer, got {workers!r}")
    if engine != "ray":
        raise ConfigError("workers (--workers) sets how many Ray actors score the rows; pass "
                          "engine='ray' (--engine ray) with it, or leave it out")


def host_port(address: str) -> tuple[str, int] | None:
    """The host and port a Ray address names (``host:port``, ``ray://host:port``), or
    None for one that names none (``auto``, ``local``)."""
    if address in NO_HOST:
        return None
    rest = address.split("://", 1)[-1].rstrip("/")
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"RAY_ADDRESS={address!r} is not a Ray address (host:port, "
                          "ray://host:port, auto); set it to the cluster's head, or unset it "
                          "for a local Ray")
    return host.strip("[]"), int(port)


def check_answers(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """One line when the head at ``address`` does not answer within ``timeout`` seconds."""
    hp = host_port(address)
    if hp is None:
        return
    try:
        with socket.create_connection(hp, timeout=timeout):
            pass
    except OSError as err:
        why = "no answer" if isinstance(err, TimeoutError) else (err.strerror or str(err))
        raise ConfigError(f"the Ray cluster at RAY_ADDRESS={address} does not answer within "
                          f"{timeout:g} s ({why}); start it (ray start --head) or unset "
                          "RAY_ADDRESS to run on a local Ray") from err


def actor_cpus(total: float, workers: int) -> float:
    """The CPUs each of ``workers`` scoring actors asks for: at most one, together at most
    the ``total``."""
    return max(math.floor(min(1.0, total / workers) * 1e4) / 1e4, 0.01)


@contextlib.contextmanager
def _handlers_kept():
    """SIGINT's and SIGTERM's handlers as they were before the block: ``ray.init`` installs
    its own for SIGTERM (which logs and ends the process) and ``ray.shutdown`` resets it to
    the default, and the audit's must stay, to remove what it wrote on a signal."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in handlers.items():
            if handler is not None:
                signal.signal(sig, handler)


def _init(address: str | None) -> None:
    import ray

    quiet = dict(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # as faux.run: no usage statistics
    try:
        with _handlers_kept():
            if address:
                ray.init(address=address, **quiet)
            else:
                ray.init(num_cpus=os.cpu_count() or 1, _temp_dir=TEMP_DIR, **quiet)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as err:
        where = f"the Ray cluster at RAY_ADDRESS={address}" if address else "a local Ray"
        raise ConfigError(f"cannot start {where}: {' '.join(str(err).split())[:200]}") from err


def start(st, files: Files) -> RaySession:
    """The Ray of this audit (settings ``st``: its ``workers`` and ``batch_size``), started
    or joined, and the pass's pipeline started on it (``faux.audit.engine.ray_pass.RayPass``:
    its actors start while the driver fits)."""
    try:
        import ray
    except ImportError as err:
        raise ConfigError("--engine ray needs Ray: pip install 'faux[cluster]'") from err
    started = False
    address = os.environ.get("RAY_ADDRESS") or None
    if not ray.is_initialized():
        if address:
            check_answers(address)
        _init(address)
        started = True
    try:
        total = float(ray.cluster_resources().get("CPU", 0))
        if total <= 0:
            raise ConfigError("the Ray cluster has no CPUs to score the rows on")
        workers = int(st.workers) if st.workers is not None else max(int(total), 1)
        where = ("already running" if not started else
                 f"RAY_ADDRESS={address}" if address else "local")
        session = RaySession(files=files, workers=workers, cpus=actor_cpus(total, workers),
                             where=where, started=started)
        from faux.audit.engine.ray_pass import RayPass

        return dataclasses.replace(session, ray_pass=RayPass(session, int(st.batch_size)))
    except BaseException:
        if started:
            with _handlers_kept():
                ray.shutdown()
        raise
