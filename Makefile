# faux — run `make help` for the list of targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# The interpreter that creates .venv: the machine's python3, or PYTHON=python3.12 (PYTHON_SYS=
# is the older name of the same setting). Checked against the supported versions before use.
PYTHON_SYS ?= python3
PYTHON     ?= $(PYTHON_SYS)
PY_SUPPORTED := 3.11 3.12 3.13
VENV       := .venv
PY         := $(VENV)/bin/python
STAMP      := $(VENV)/.installed
PROFILE    ?= quick
LOGGER     ?= csv
# a sweep's launcher (Hydra's hydra/launcher group: basic, joblib, ray, submitit_local,
# submitit_slurm); empty: the experiment's own (joblib)
LAUNCHER   ?=
ifeq ($(LOGGER),wandb)
  AGG_ARGS += --wandb
endif

# Data root: the caller's FAUX_DATA_DIR, else ../shared/data when present, else ./data.
ifeq ($(strip $(FAUX_DATA_DIR)),)
  ifneq ($(wildcard ../shared/data),)
    FAUX_DATA_DIR := $(abspath ../shared/data)
  else
    FAUX_DATA_DIR := $(abspath data)
  endif
endif
export FAUX_DATA_DIR
export OMP_NUM_THREADS ?= 1
# pytest-xdist workers for `make test` (tests run torch on one thread: two workers use both
# cores of the 2-core CI machine; each test file stays on one worker, the longest files first:
# tests/conftest.py LONG_FIRST)
PYTEST_WORKERS ?= 2
export PYTHONWARNINGS ?= ignore::DeprecationWarning

.PHONY: help python-check install check-wheels test test-full lint bench clean fig8 table1 table1-regime real fig4 table3 table4 fig5 fig11 readings readings-axes all wandb-sync worlds

# make help: the targets by section, each with the text after its `##`
help: ## list the targets, by section
	@section() { echo "$$1"; shift; for t in "$$@"; do \
	  awk -v t="$$t" 'BEGIN{FS=":.*?## "} $$1 == t && /^[a-zA-Z0-9_-]+:.*?## /{printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST); \
	done; }; \
	section "main job" install all; \
	echo "  one job:       $(PY) -m faux.run [group=option ...] [key=value ...] (--help: experiments, groups)"; \
	section "tables and figures" table1 table1-regime real fig4 table3 table4 fig5 fig11 fig8 readings readings-axes worlds docs; \
	echo "  (PROFILE=quick|paper, LAUNCHER=<name> for a sweep's launcher, ARGS=<overrides>; data root: $(FAUX_DATA_DIR))"; \
	echo "audit"; \
	echo "  faux audit --model PATH --data PATH --protected COLUMN ...  (faux audit --help; docs/audit.md)"; \
	section "development" test test-full lint bench python-check check-wheels wandb-sync clean help

# "<major.minor> <path>" of $(PYTHON), empty when it does not run
PY_FOUND = $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2], sys.executable)' 2>/dev/null)
# expands to nothing for a supported $(PYTHON); otherwise stops make with one line
PY_CHECK = $(if $(filter $(PY_SUPPORTED),$(firstword $(PY_FOUND))),,$(error faux needs Python \
  $(firstword $(PY_SUPPORTED))-$(lastword $(PY_SUPPORTED)); found $(if $(PY_FOUND),$(firstword \
  $(PY_FOUND)) at $(wordlist 2,99,$(PY_FOUND)),no Python at '$(PYTHON)'); pass \
  PYTHON=python$(lastword $(PY_SUPPORTED)) or another supported interpreter))

python-check: ## check that PYTHON (default: python3) is a supported Python (3.11-3.13)
	$(PY_CHECK)@echo "Python $(firstword $(PY_FOUND)) at $(wordlist 2,99,$(PY_FOUND)): supported ($(PY_SUPPORTED))"

# the check runs only when .venv is to be created: an existing .venv keeps its interpreter
$(STAMP): pyproject.toml constraints.txt
	$(if $(wildcard $(PY)),,$(PY_CHECK))@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP) ## create .venv with PYTHON and install faux[dev] at the versions of constraints.txt (no-op when done)

# Python versions whose wheels check-wheels looks for (the supported ones other than CI's 3.11)
WHEEL_PYTHONS ?= 3.12 3.13
WHEEL_PLATFORMS := manylinux_2_28_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64
PIP_TARGET = --no-deps --python-version $$v $(addprefix --platform ,$(WHEEL_PLATFORMS))

check-wheels: ## needs PyPI: does each constraints.txt line publish a wheel for WHEEL_PYTHONS? (~320 MB per version into a temp folder, deleted after; torch by metadata only)
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; status=0; \
	for v in $(WHEEL_PYTHONS); do \
	  wheels=0; sdists=""; \
	  for req in $$(grep -Ev '^(#|$$)' constraints.txt); do \
	    if [ "$${req%%==*}" = torch ]; then \
	      $(PYTHON) -m pip install -q --dry-run --ignore-installed --only-binary=:all: $(PIP_TARGET) \
	        --target "$$tmp/t" --report "$$tmp/torch.json" "$$req" 2>/dev/null; \
	    else \
	      $(PYTHON) -m pip download -q --only-binary=:all: $(PIP_TARGET) -d "$$tmp/$$v" "$$req" >/dev/null 2>&1; \
	    fi && wheels=$$((wheels + 1)) && continue; \
	    if $(PYTHON) -m pip download -q --no-binary=:all: $(PIP_TARGET) -d "$$tmp/$$v" "$$req" >/dev/null 2>&1; \
	    then sdists="$$sdists $$req"; else echo "Python $$v: no wheel and no sdist for $$req"; status=1; fi; \
	  done; \
	  echo "Python $$v: $$wheels with a wheel; sdist only:$${sdists:- none}"; rm -rf "$$tmp/$$v"; \
	done; exit $$status

test: install ## run the fast test suite (pytest -m "not slow", PYTEST_WORKERS processes)
	$(PY) -m pytest -m "not slow" -q -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

test-full: install ## run every test, the slow sweeps included
	$(PY) -m pytest -q

lint: install ## ruff over src, tests, scripts, bench
	$(VENV)/bin/ruff check src tests scripts bench

bench: install ## speed ratios of the scorers and training loop (prints name: value lines)
	$(PY) bench/scorers.py
	$(PY) bench/gans.py
	$(PY) bench/aux_stack.py
	$(PY) bench/audit.py --rows 1000000

SWEEP = outputs/$(1)/multiruns/$(PROFILE)
# A sweep writes into a folder fixed per profile, so rerunning after an interruption finds
# the finished jobs (same config hash) and runs only the missing ones.
define sweep
	$(PY) -m faux.run -m experiment=$(1) profile=$(PROFILE) logger=$(LOGGER) $(if $(LAUNCHER),hydra/launcher=$(LAUNCHER)) hydra.sweep.dir=$(call SWEEP,$(1)) $(ARGS)
endef

table1: install ## Table 1: AP of every registered test on 8 synthetic columns (outputs/results/table1.{csv,md,tex})
	$(call sweep,table1)
	$(PY) -m faux.aggregate $(call SWEEP,table1) --table table1 $(AGG_ARGS)

# Table 1 under another generator regime than the selected reading, in its own sweep and
# results folders (make docs adds a section per regime found)
REGIME ?= p30_softmax_logitbias
table1-regime: install ## Table 1 under a second generator regime, REGIME=<reading> (default p30_softmax_logitbias; outputs/results/table1_<reading>/)
	$(PY) -m faux.run -m experiment=table1 profile=$(PROFILE) logger=$(LOGGER) reading=$(REGIME) $(if $(LAUNCHER),hydra/launcher=$(LAUNCHER)) hydra.sweep.dir=outputs/table1_$(REGIME)/multiruns/$(PROFILE) $(ARGS)
	$(PY) -m faux.aggregate outputs/table1_$(REGIME)/multiruns/$(PROFILE) --table table1 --results-dir outputs/results/table1_$(REGIME) --figures-dir outputs/figures/table1_$(REGIME) $(AGG_ARGS)

real: install ## the real-data sweep shared by fig4/table3/table4 (SSL only when its CSV is placed)
	$(call sweep,real)

fig4: real ## Fig. 4/10: unfair vs fair model scores per test (outputs/figures/fig4_<dataset>.png, outputs/results/fig4.csv)
	$(PY) -m faux.aggregate $(call SWEEP,real) --table fig4 $(AGG_ARGS)

table3: real ## Table 3: NDCG of transparency reports (outputs/results/table3.{csv,md})
	$(PY) -m faux.aggregate $(call SWEEP,real) --table table3 $(AGG_ARGS)

table4: real ## Table 4: FlipTest vs fAux parameters and training time (outputs/results/table4.{csv,md})
	$(PY) -m faux.aggregate $(call SWEEP,real) --table table4 $(AGG_ARGS)

fig5: install ## Fig. 5: fAux PR curves by bias, aux accuracy, target gradient (outputs/figures/fig5.png, outputs/results/fig5.csv)
	$(call sweep,fig5)
	$(PY) -m faux.aggregate $(call SWEEP,fig5) --table fig5 $(AGG_ARGS)

fig11: install ## Fig. 11: FlipTest AP vs its GAN's KS and MSE over lambda (outputs/figures/fig11.png, outputs/results/fig11.csv)
	$(call sweep,fig11)
	$(PY) -m faux.aggregate $(call SWEEP,fig11) --table fig11 $(AGG_ARGS)

readings: install ## the readings study: which prevalence-matched reading of the synthetic benchmark reproduces Table 1 (outputs/results/readings.{csv,md}, outputs/figures/readings.png)
	$(call sweep,readings)
	$(PY) -m faux.aggregate $(call SWEEP,readings) --table readings $(AGG_ARGS)

readings-axes: install ## the one-axis readings (conf/reading/axes/), in normalised AP (outputs/results/readings_axes/)
	$(call sweep,readings_axes)
	$(PY) -m faux.aggregate $(call SWEEP,readings_axes) --table readings --results-dir outputs/results/readings_axes --figures-dir outputs/figures/readings_axes $(AGG_ARGS)

# the validation worlds (faux.worlds): their own runner, not a Hydra sweep; it resumes from
# outputs/results/worlds.<profile>.jobs.jsonl (PROFILE=paper runs the default, full suite)
worlds: install ## estimated counterfactuals (today's audit, mean shift, quantile map, oracle) against exact ones on DoWhy and causal-profiler worlds (outputs/results/worlds.{csv,md})
	$(PY) -m faux.worlds.run $(if $(filter quick,$(PROFILE)),--quick) $(ARGS)

all: table1 readings fig8 fig4 table3 table4 fig5 fig11 ## every table and figure

wandb-sync: install ## upload offline W&B runs (needs network and `wandb login`)
	@find outputs -type d -name 'offline-run-*' -print0 | xargs -0 -r $(VENV)/bin/wandb sync

fig8: install ## Figure 8: IFS histograms by bias (outputs/figures/fig8.png, outputs/results/fig8.csv)
	$(PY) -m faux.run experiment=fig8 profile=$(PROFILE) logger=$(LOGGER) $(ARGS)

clean: ## remove outputs (runs, results, figures, cache); never the data root
	rm -rf outputs/* .pytest_cache

.PHONY: docs
docs: install ## docs/figures/: small PNGs and tables naming command and profile, from outputs/ (ONLY=table1,fig4 for some)
	$(PY) scripts/make_docs.py $(if $(ONLY),--only $(ONLY))
