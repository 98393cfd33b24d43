"""The machine a job ran on, as far as its numbers can depend on it: the CPU model, the CPU
kernels in force (``faux.kernels`` pins torch's, MKL's and oneDNN's code paths; the cache keys
record them through ``faux.kernels.cpu_kernels``) and the thread counts of torch and of
the BLAS / OpenMP libraries loaded in the process (``threadpoolctl``).

Recorded in a job's result (``metrics.machine``) and carried into the claims made from it, so
two sets of numbers that differ can be traced to the machines that made them.
"""

from __future__ import annotations

import os
import platform


def cpu_model() -> str:
    """The CPU's model name (Linux ``/proc/cpuinfo``), else ``platform.processor()``, else
    the machine type."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "?"


def thread_pools() -> list[dict]:
    """Each BLAS / OpenMP library loaded in this process with its thread count (empty without
    ``threadpoolctl``)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    return [{"api": p.get("internal_api"), "version": p.get("version"),
             "threads": p.get("num_threads"), "arch": p.get("architecture")}
            for p in threadpool_info()]


def machine() -> dict:
    """``{"cpu", "kernels", "torch_threads", "pools", "pins"}`` of this process."""
    import torch

    from faux.kernels import PINS, cpu_kernels

    return {"cpu": cpu_model(), "kernels": cpu_kernels(),
            "torch_threads": int(torch.get_num_threads()), "pools": thread_pools(),
            "pins": {k: os.environ.get(k) for k in PINS}}


def label(m: dict) -> str:
    """One line naming a recorded machine: CPU, kernels, torch threads."""
    return (f"{m.get('cpu', '?')}; kernels {m.get('kernels', '?')}; torch threads "
            f"{m.get('torch_threads', '?')}")
