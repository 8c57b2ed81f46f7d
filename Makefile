# Quick start: `make demo` and `make test`. Each sets up .venv when it is missing.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck schema docs targets plan-golden bench clean

# Debian ships python3's venv module apart (python3-venv); say so in one line rather than
# leave a .venv without pip. The README's "System packages" lists the rest.
$(STAMP): pyproject.toml
	@test -x $(PY) || command -v python3 >/dev/null || { echo "make: python3 is not installed: apt-get install python3 python3-venv" >&2; exit 1; }
	@test -x $(PY) || python3 -c 'import ensurepip, venv' 2>/dev/null || { echo "make: python3's venv module is not installed: apt-get install python3-venv" >&2; exit 1; }
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	@echo "== mcpspec lint: the five scenario examples (--ignore TS008,TS009: their servers are not installed here, so no mcp-sandbox.lock pins their tools, and two are reached over HTTP, where only the server knows its full tool list)"
	@$(VENV)/bin/mcpspec lint --ignore TS008,TS009 examples/coding-agent.yaml examples/browser-agent.yaml examples/data-connector.yaml examples/deploy-tool.yaml examples/package-analysis.yaml
	@echo
	@echo "== mcpspec lint examples/risky.yaml (deliberately unsafe; the first findings, then the summary)"
	@$(VENV)/bin/mcpspec lint examples/risky.yaml --exit-zero > .demo-risky.txt; head -n 24 .demo-risky.txt; echo "   ..."; tail -n 1 .demo-risky.txt; rm -f .demo-risky.txt
	@echo
	@echo "== a spec with mistakes: tests/corpus/demo-broken.yaml"
	@$(VENV)/bin/mcpspec lint tests/corpus/demo-broken.yaml || true
	@echo
	@echo "== mcpspec build examples/coding-agent.yaml --target bwrap --out build/bwrap"
	@$(VENV)/bin/mcpspec build examples/coding-agent.yaml --target bwrap --out build/bwrap 2>&1 | grep -v '^ ' || true
	@ls -l build/bwrap
	@echo "-- the head of build/bwrap/repo.py (the generated part, long lines such as the seccomp programs cut here; the constant runtime follows it):"
	@sed -n '/^CONFIG = {/,/^}/p' build/bwrap/repo.py | awk '{ if (length($$0) > 150) print substr($$0, 1, 147) "..."; else print }'
	@echo "-- first run on this host: systemd-tmpfiles --create build/bwrap/acme-coding-agent.tmpfiles.conf (README: First run)"

# pytest's status 5 (no test collected) fails like any other non-zero status.
test: $(STAMP) lint typecheck
	@echo "$(PY) -m pytest -q --durations=30"
	@$(PY) -m pytest -q --durations=30; status=$$?; \
	if [ $$status -eq 5 ]; then echo "make: pytest collected no tests" >&2; fi; \
	exit $$status

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks

typecheck: $(STAMP)
	$(VENV)/bin/mypy --strict src

# Regenerate the committed files that tests keep in sync.
schema: $(STAMP)
	$(VENV)/bin/mcpspec schema > schemas/mcp-sandbox.schema.json.tmp && mv schemas/mcp-sandbox.schema.json.tmp schemas/mcp-sandbox.schema.json

docs: $(STAMP)
	$(PY) -m mcpspec.spec.docs > docs/spec.md.tmp && mv docs/spec.md.tmp docs/spec.md
	$(PY) -m mcpspec.report.ruledocs docs/rules
	$(PY) -m mcpspec.targets.seccomp.docs > docs/seccomp.md.tmp && mv docs/seccomp.md.tmp docs/seccomp.md

targets: $(STAMP)
	$(PY) -m mcpspec.targets.examples targets

# The resolved plan of every example, pinned under tests/golden/plan (review the diff).
plan-golden: $(STAMP)
	MCPSPEC_UPDATE_GOLDEN=1 $(PY) -m pytest -q -p no:cacheprovider tests/test_plan.py -k golden_file

bench: $(STAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
