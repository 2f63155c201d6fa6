# dvrk_ident: the two commands a user needs are `make demo` and `make test`.
VENV   := .venv
PY     := $(VENV)/bin/python
SHELL  := /bin/bash

.PHONY: setup test lint demo bench colcon-check clean help

help:
	@echo "make demo    set up on first use, run the main job on the simulated arms"
	@echo "make test    set up on first use, run the whole test suite (lint included)"
	@echo "make bench   run the benchmarks and print their figures"
	@echo "make setup   the virtual environment .venv with dvrk_ident built into it"

setup:
	@bash tools/setup.sh

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

test: setup
	@bash tools/test.sh

colcon-check: setup
	bash tools/colcon_check.sh

bench: setup
	$(PY) -m bench

demo: setup
	$(VENV)/bin/dvrk-ident demo

clean:
	rm -rf build install log
