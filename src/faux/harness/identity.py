"""A job's identity: its plain config, the hash of what it computes, and the folder of a
multirun job.

The config hash covers the resolved config less paths and logging (:data:`VOLATILE`;
Hydra's own settings, the launcher among them, are not in it), the profile sections only
other studies read (:data:`STUDY_SECTIONS`), the keys a one-method job does not read (the
caller names them: ``faux.studies.job.config_hash`` asks the method registry), and the
checksum of the data files the job names, so the same sweep over a changed data root reruns.
A job whose folder holds a finished ``result.json`` with the same hash is skipped.

Job folders of a multirun are named by :func:`job_dir_name` (``hydra.sweep.subdir`` in
conf/hydra/default.yaml, through the ``${faux_job_dir:}`` resolver): a hash of the job's own
overrides, not its number, so a sweep with other parameters into the same folder never
overwrites another cell's result, and the same command finds the same folders (resume).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

#: overrides that do not change what a job computes (left out of its folder name); the
#: launcher is a Hydra override (``hydra/launcher=``, never a task override), and ``launcher``
#: is its former group, still named in older sweeps' overrides
DIR_VOLATILE = ("logger", "launcher")

#: config keys that do not change what a job computes (left out of the config hash)
VOLATILE = ("paths", "hydra", "logger", "trainer.accelerator")

#: profile sections read by one job only; other jobs leave them out of their hash, so adding
#: or changing a study's section does not make every other study's sweep rerun
STUDY_SECTIONS = {"real": "real_cell", "fig5": "fig5_cell", "fig11": "fig11_cell"}


def job_key(overrides) -> tuple[str, ...]:
    """A job's identity in a sweep: its overrides, sorted, less logger/launcher choices."""
    out = []
    for o in overrides or []:
        key = str(o).split("=", 1)[0].lstrip("+~")
        if key.split(".")[0] not in DIR_VOLATILE:
            out.append(str(o))
    return tuple(sorted(out))


def job_dir_name(overrides) -> str:
    """The folder of a multirun job: ``j`` + 12 hex of the hash of :func:`job_key` (the
    same overrides in any order give the same folder; other overrides another one)."""
    blob = json.dumps(list(job_key(overrides))).encode()
    return "j" + hashlib.sha256(blob).hexdigest()[:12]


def register_job_dir_resolver() -> None:
    """``${faux_job_dir:}``: :func:`job_dir_name` of the job's task overrides."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("faux_job_dir"):
        def job_dir(*, _root_) -> str:
            task = OmegaConf.select(_root_, "hydra.overrides.task", default=None) or []
            return job_dir_name(OmegaConf.to_container(task) if not isinstance(task, list)
                                else task)

        OmegaConf.register_new_resolver("faux_job_dir", job_dir)


def plain_config(cfg) -> dict:
    """The resolved config (a DictConfig) as plain containers, without Hydra's own node."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)


def config_hash(cfg: dict, data_sha256: str | None = None,
                foreign_keys: Iterable[str] = ()) -> str:
    """A stable hash of what the job computes: the config less :data:`VOLATILE`, the
    profile sections of other studies (:data:`STUDY_SECTIONS`) and the dotted
    ``foreign_keys`` (for a one-method job, the keys only other methods read), and the
    checksum of the data files it reads."""
    c = json.loads(json.dumps(cfg, default=str))
    if data_sha256 is not None:
        c["__data_sha256__"] = data_sha256
    for key in VOLATILE:
        node, *rest = key.split(".")
        if rest and isinstance(c.get(node), dict):
            c[node].pop(rest[0], None)
        elif not rest:
            c.pop(node, None)
    profile = c.get("profile")
    if isinstance(profile, dict):
        for section, owner in STUDY_SECTIONS.items():
            if c.get("job") != owner:
                profile.pop(section, None)
    for key in foreign_keys:
        _pop_dotted(c, key)
    blob = json.dumps(c, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def _pop_dotted(c: dict, key: str) -> None:
    *parents, last = key.split(".")
    for p in parents:
        c = c.get(p) if isinstance(c, dict) else None
    if isinstance(c, dict):
        c.pop(last, None)


def config_yaml_key(path: Path, data_sha256: str | None) -> dict:
    """The cache key of a job folder's config hash: the bytes of its ``.hydra/config.yaml``,
    the data checksum, the faux code (read by ``faux.reports.sweep.stored_config_hash``)."""
    from faux.harness.cache import package_version
    from faux.harness.files import file_sha256

    return {"config_yaml": file_sha256(path),
            "data": data_sha256, "code": package_version()}


def memo_key(chash: str) -> dict:
    """The cache key of a memoised job result (``studies.MEMO_JOBS``: jobs whose whole output
    is result.json): its config hash and a hash of every faux source file, so a rerun under
    other overrides reuses it and no entry outlives a code change."""
    from faux.harness.cache import package_version

    return {"config_hash": chash, "code": package_version()}
