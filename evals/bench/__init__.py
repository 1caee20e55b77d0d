"""Benchmarks behind `loci bench assemble`, `ingest` and `scale`.

    cli.py      the `loci bench` command line (argument parsing only)
    corpus.py   seeded template corpora: distinct short memories of one entity (a tenth facts), drafts, turns
    turns.py    seeded assemble requests: varied turns, presets and budgets
    vectors.py  VectorCache: corpus vectors persisted in <cache_dir>/vectors-2.db by (model, text hash)
    harness.py  percentiles, scratch data dirs, a real `loci serve` subprocess and a bearer key
    assemble.py latency per corpus size: pipeline stages in process, client wall time over HTTP
    ingest.py   memories/s (single and batch, in process and HTTP) and assemble-with-ingest per turn
    scale.py    PostgreSQL at scale: bulk load, size, assemble over HTTP with 1..N workers
    channels.py a micro-benchmark of the store's retrieval channels on a synthetic corpus
    redos.py    adversarial turns over HTTP: assemble latency and /v0/health meanwhile

    loci bench assemble --sizes 1000,10000,100000 --calls 200 --embedder minilm
    loci bench ingest --n 2000 --turns 100 --embedder minilm

The first minilm run embeds the corpus and caches it; `--max-embed N` caps that and gives the rest
stand-in vectors, which the table reports.
"""
