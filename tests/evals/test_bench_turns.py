from evals.bench.turns import assemble_requests


def test_requests_vary() -> None:
    reqs = assemble_requests(20)
    assert len({r.turn for r in reqs}) == 20 and len({r.retrieval.preset for r in reqs}) > 1


def test_requests_are_seeded() -> None:
    assert [r.turn for r in assemble_requests(5, seed=3)] == [r.turn for r in assemble_requests(5, seed=3)]
