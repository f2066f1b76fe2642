# BAM for ROS 2: the two commands of README.md.
#   make run   main job: record the simulated bench, fit M1..M6, report (bench session;
#              ARGS="..." passes options, e.g. ARGS="--output-dir out/x")
#   make test  ruff, the documentation built strictly, pytest over every package's test/ folder
#   make docs  the documentation site (mkdocs.yml, docs/) into site/, strict
#   make benchmark  simulator throughput vs the reference (benchmarks/)
#   make soak  every long-running executable stopped many times under load
#              (benchmarks/results/soak.json)
# Both create .venv, install requirements.lock when it changed and build the
# workspace with colcon first; the logic lives in tools/workspace.sh.

WS := tools/workspace.sh
ARGS ?=

.PHONY: run test docs benchmark soak setup build clean distclean

run: build
	@$(WS) run bam_bringup bench session $(ARGS)

test: build
	@$(WS) test

# The documentation site, in strict mode; its reference pages are generated from the code.
docs: build
	@$(WS) docs

# Throughput of the numba simulator, side by side with the reference
# implementation (installed in .venv-ref); writes benchmarks/results/*.json.
benchmark: build
	@$(WS) exec python benchmarks/throughput.py

# Stops after real traffic, many per executable, under load: a benchmark, not the gate.
soak: build
	@$(WS) exec python benchmarks/soak.py $(ARGS)

setup:
	@$(WS) setup

build: setup
	@$(WS) build

clean:
	@$(WS) clean

distclean:
	@$(WS) clean --all
