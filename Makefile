.PHONY: setup lab test notebooks bench clean distclean

PY := .venv/bin/python

setup:
	bash scripts/setup.sh

lab: setup
	.venv/bin/jupyter lab notebooks/

test: setup
	$(PY) -m pytest -q --doctest-modules minitape tests
	@if ls notebooks/*.ipynb >/dev/null 2>&1; then \
		echo "$(PY) -m pytest -q --nbval ... notebooks/"; \
		$(PY) -m pytest -q --nbval --nbval-current-env \
			--nbval-sanitize-with notebooks/sanitize.cfg notebooks/; \
	else \
		echo "test: no notebooks/*.ipynb yet, skipping nbval"; \
	fi

notebooks: setup
	$(PY) scripts/build_notebooks.py
	$(PY) scripts/run_notebooks.py

bench: setup
	$(PY) -m benchmarks

clean:
	rm -rf build/ *.egg-info .pytest_cache .hypothesis
	find . -path ./.venv -prune -o \
		\( -name __pycache__ -o -name .ipynb_checkpoints \) -type d -print0 \
		| xargs -0 rm -rf

# Also drops the virtualenv; the next `make setup` rebuilds it (takes minutes).
distclean: clean
	rm -rf .venv
