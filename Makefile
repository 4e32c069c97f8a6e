.PHONY: setup lab test notebooks exercises site bench clean distclean

setup:
	bash scripts/setup.sh

# Each task runs the set-up first; scripts/run.sh holds the commands (it works without make).
lab:
	bash scripts/run.sh lab

test:
	bash scripts/run.sh test

notebooks:
	bash scripts/run.sh notebooks

# The lessons' learner copies without solutions (notebooks/exercises/); `notebooks` does it too.
exercises:
	bash scripts/run.sh exercises

# The course site: every lesson from its stored outputs, offline (build/site/index.html).
site:
	bash scripts/run.sh site

bench:
	bash scripts/run.sh bench

clean:
	rm -rf build/ *.egg-info .pytest_cache .hypothesis
	find . -path ./.venv -prune -o \
		\( -name __pycache__ -o -name .ipynb_checkpoints \) -type d -print0 \
		| xargs -0 rm -rf

# Also drops the virtualenv; the next `make setup` rebuilds it (takes minutes).
distclean: clean
	rm -rf .venv
