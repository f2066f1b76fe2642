# BAM for ROS 2: the two commands of README.md.
#   make run   main job: the simulator with its defaults (ARGS="..." passes options)
#   make test  ruff + pytest over every package's test/ folder
#   make benchmark  simulator throughput vs the reference (benchmarks/)
# Both create .venv, install requirements.lock when it changed and build the
# workspace with colcon first; the logic lives in tools/workspace.sh.

WS := tools/workspace.sh
# The main job regenerates its own figures under out/ on every run.
ARGS ?= --output out/simulate.png --diagram out/drive_backdrive.png --force

.PHONY: run test benchmark setup build clean distclean

run: build
	@$(WS) run bam_sim simulate $(ARGS)

test: build
	@$(WS) test

# Throughput of the numba simulator, side by side with the reference
# implementation (installed in .venv-ref); writes benchmarks/results/*.json.
benchmark: build
	@$(WS) exec python benchmarks/throughput.py

setup:
	@$(WS) setup

build: setup
	@$(WS) build

clean:
	@$(WS) clean

distclean:
	@$(WS) clean --all
