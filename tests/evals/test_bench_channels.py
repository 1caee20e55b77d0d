from evals.bench.channels import run_benchmark


def test_benchmark_runs_on_a_tiny_corpus() -> None:
    result = run_benchmark(n=300, dim=8, repeats=1, k=5)
    assert result.n == 300
    assert {c.channel for c in result.channels} >= {"vector", "keyword", "graph_depth2", "scope_size"}
