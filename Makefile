# dvrk_ident: the two commands a user needs are `make demo` and `make test`.
# ROS 2 Jazzy by default; `make test ROS_DISTRO=kilted` builds and uses a Kilted venv beside it.
# One venv per distro (DVRK_IDENT_VENV, if set, names it instead); tools/setup.sh refuses to mix distros in one.
ROS_DISTRO ?= jazzy
ifneq ($(DVRK_IDENT_VENV),)
VENV   := $(DVRK_IDENT_VENV)
else ifeq ($(ROS_DISTRO),jazzy)
VENV   := .venv
else
VENV   := .venv-$(ROS_DISTRO)
endif
PY     := $(VENV)/bin/python
SHELL  := /bin/bash
export ROS_DISTRO
export DVRK_IDENT_VENV := $(abspath $(VENV))

.PHONY: setup test lint demo bench docs colcon-check clean help

help:
	@echo "make demo    set up on first use, run the main job on the simulated arms"
	@echo "make test    set up on first use, run the whole test suite (lint included)"
	@echo "make bench   run the benchmarks and print their figures"
	@echo "make docs    the documentation site (docs/, mkdocs) in build/site"
	@echo "make setup   the virtual environment $(VENV) (ROS 2 $(ROS_DISTRO)) with dvrk_ident built into it"
	@echo "ROS_DISTRO=jazzy (default, .venv) or ROS_DISTRO=kilted (.venv-kilted), e.g. make test ROS_DISTRO=kilted"

setup:
	@bash tools/setup.sh

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

test: setup
	@bash tools/test.sh

colcon-check: setup
	bash tools/colcon_check.sh

docs: setup
	$(PY) -m dvrk_ident_ros.parameters.reference
	$(VENV)/bin/mkdocs build --strict

bench: setup
	$(PY) -m bench

demo: setup
	$(VENV)/bin/dvrk-ident demo

clean:
	rm -rf build install log
