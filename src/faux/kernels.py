"""One CPU kernel set for every machine, so a cached artifact and a table come out the same
wherever they are built.

torch picks its CPU kernels by instruction set (AVX2, AVX-512) and MKL picks its own code
path per CPU model (on AMD CPUs another one than on Intel). Last-bit differences between
those paths grow through thousands of optimiser steps into other CVAEs, targets and tables
(docs/reliability.md, "Determinism"). :func:`pin` sets, before torch is imported, the environment variables
that fix both to AVX2 (:data:`PINS`), which every x86-64 CPU of the last decade runs:
torch's ``ATEN_CPU_CAPABILITY``, MKL's conditional numerical reproducibility ``MKL_CBWR``
(which also makes MKL's results independent of memory alignment) and oneDNN's
``ONEDNN_MAX_CPU_ISA``.

The harness entry points (``python -m faux.run``, the Makefile) pin; the library
(``faux.score``, ``faux.audit``) leaves the caller's process alone. A value the user exported
wins (``FAUX_NATIVE_KERNELS=1`` keeps the machine's own kernels); the cache keys record the
kernels in force (:func:`cpu_kernels`), so artifacts built under other
kernels are never mixed.
"""

from __future__ import annotations

import os
import platform
import sys

PINS = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}


def cpu_has_avx2() -> bool:
    """True on an x86-64 CPU that reports AVX2 (Linux /proc/cpuinfo; other systems: the
    machine type alone)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " avx2" in line for line in f)
    except OSError:
        return True


def pin(environ=None) -> dict:
    """Set :data:`PINS` in ``environ`` (default ``os.environ``) where unset; returns what it
    set. Nothing when ``FAUX_NATIVE_KERNELS`` is set, on a CPU without AVX2, or when torch is
    already imported in this process (too late: its kernels are chosen)."""
    env = os.environ if environ is None else environ
    if env.get("FAUX_NATIVE_KERNELS") or not cpu_has_avx2():
        return {}
    if environ is None and "torch" in sys.modules:
        return {}
    done = {}
    for k, v in PINS.items():
        if k not in env:
            env[k] = v
            done[k] = v
    return done


def cpu_kernels() -> str:
    """torch's CPU kernel set (e.g. ``AVX512``), MKL's and oneDNN's pinned code paths, if any
    (:func:`pin` pins all three)."""
    import torch

    return (f"{torch.backends.cpu.get_cpu_capability()}/mkl_cbwr={os.environ.get('MKL_CBWR', '')}"
            f"/onednn={os.environ.get('ONEDNN_MAX_CPU_ISA', '')}")
