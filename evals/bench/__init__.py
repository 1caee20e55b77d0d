"""Benchmarks behind `loci bench assemble` and `loci bench ingest` (server/commands/bench.py).

    corpus.py   seeded template corpora: distinct short memories of one entity (a tenth facts), drafts, turns
    vectors.py  VectorCache: corpus vectors persisted in <cache_dir>/vectors.db by (model, text hash)
    harness.py  percentiles, scratch data dirs, a real `loci serve` subprocess and a bearer key
    assemble.py latency per corpus size: pipeline stages in process, client wall time over HTTP
    ingest.py   memories/s (single and batch, in process and HTTP) and assemble-with-ingest per turn

    loci bench assemble --sizes 1000,10000,100000 --calls 200 --embedder minilm
    loci bench ingest --n 2000 --turns 100 --embedder minilm

The first minilm run embeds the corpus (100k texts; 50 to 270 texts/s on the 2-core machine) and caches
it; `--max-embed N` caps that and gives the rest stand-in vectors, which the table reports.
"""
