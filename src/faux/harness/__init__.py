"""The harness: what every job and every sweep shares, below the studies and the methods.

- :mod:`~faux.harness.identity`: a job's identity (the plain config, its hash, the job key and
  folder name of a multirun job, the cache keys of a stored hash and of a memoised result)
- :mod:`~faux.harness.results`: ``result.json`` written atomically, read back, marked stale
- :mod:`~faux.harness.guard`: the launch check, the sweep folder lock, Ctrl-C
  (Hydra callback :class:`~faux.harness.guard.SweepGuard`)
- :mod:`~faux.harness.joblog`: a finished job's config, labels and numbers to the logger
- :mod:`~faux.harness.wandb_cells`, :mod:`~faux.harness.curves`: one W&B run per sweep cell
  (stable id and name, reused cells tagged) and the training curves a job's trainers log into it
- :mod:`~faux.harness.validate`: the numeric override table
- :mod:`~faux.harness.schema`: the typed schema of the profile, synthetic and reading groups
  (Hydra structured configs)
- :mod:`~faux.harness.cache`: the artifact cache
- :mod:`~faux.harness.files`: a file's SHA-256 and the atomic writes every writer shares
- :mod:`~faux.harness.progress`: sweep progress (Hydra callback), with a job's headline
  (:mod:`~faux.harness.headlines`), the sweep's jobs (:mod:`~faux.harness.sweep_jobs`) and
  the count and its display (:mod:`~faux.harness.tally`)
- :mod:`~faux.harness.exits`: how ``python -m faux.run`` ends (one-line errors, exit codes)
- :mod:`~faux.harness.console`, :mod:`~faux.harness.provenance`: summaries and table
  provenance of the aggregation

Nothing here imports the studies, the methods or the data loaders (docs/architecture.md);
what a job's hash or checks need from them is in :mod:`faux.studies.job`. Importing this
package loads neither torch nor Hydra.
"""
