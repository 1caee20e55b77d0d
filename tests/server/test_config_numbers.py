"""LOCI_* numbers and URLs that parts built after start read (embedders, the LLM, extraction, /metrics):
a bad value stops the command at start with one line naming the variable, never a traceback or a server
whose embedder never loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import InvalidInput
from server.cli import main
from server.config import Settings

BAD = [
    ({"LOCI_EMBEDDER": "openai", "LOCI_EMBED_TIMEOUT": "soon"}, "LOCI_EMBED_TIMEOUT"),
    ({"LOCI_EMBEDDER": "openai", "LOCI_EMBED_TIMEOUT": "-1"}, "LOCI_EMBED_TIMEOUT"),
    ({"LOCI_EMBEDDER": "openai", "LOCI_EMBED_DIM": "big"}, "LOCI_EMBED_DIM"),
    ({"LOCI_EMBEDDER": "minilm", "LOCI_TORCH_THREADS": "two"}, "LOCI_TORCH_THREADS"),
    ({"LOCI_EMBEDDER": "minilm", "LOCI_TORCH_THREADS": "0"}, "LOCI_TORCH_THREADS"),
    ({"LOCI_EMBEDDER": "hash", "LOCI_LLM_TIMEOUT": "soon"}, "LOCI_LLM_TIMEOUT"),
    ({"LOCI_EMBEDDER": "hash", "LOCI_METRICS_VECTORS_SECONDS": "often"}, "LOCI_METRICS_VECTORS_SECONDS"),
    ({"LOCI_EMBEDDER": "hash", "LOCI_EXTRACT_BUDGET_MS": "nan"}, "LOCI_EXTRACT_BUDGET_MS"),
    ({"LOCI_EMBEDDER": "hash", "LOCI_EXTRACT_BUDGET_MS": "-5"}, "LOCI_EXTRACT_BUDGET_MS"),
    # no scheme: the server ran, every embedding or extraction call failing
    ({"LOCI_EMBEDDER": "openai", "LOCI_EMBED_URL": "localhost:11434"}, "LOCI_EMBED_URL"),
    ({"LOCI_EMBEDDER": "openai", "LOCI_EMBED_URL": "ftp://models.example"}, "LOCI_EMBED_URL"),
    ({"LOCI_EMBEDDER": "hash", "LOCI_LLM_URL": "localhost:11434"}, "LOCI_LLM_URL"),
    ({"LOCI_EMBEDDER": "hash", "LOCI_LLM_URL": "http://"}, "LOCI_LLM_URL"),
]


@pytest.mark.parametrize(("env", "name"), BAD)
def test_a_bad_number_is_refused_when_the_settings_are_read(env: dict[str, str], name: str) -> None:
    with pytest.raises(InvalidInput, match=name):
        Settings.from_env(env)


@pytest.mark.parametrize(("env", "name"), BAD)
def test_the_command_says_so_in_one_line_and_exits_2(
    env: dict[str, str],
    name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert main(["keys", "create", "--org", "acme", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and name in err and err.count("\n") == 1


def test_good_numbers_and_zeros_that_mean_off_pass() -> None:
    settings = Settings.from_env(
        {
            "LOCI_EMBEDDER": "openai",
            "LOCI_EMBED_TIMEOUT": "2.5",
            "LOCI_EMBED_DIM": "768",
            "LOCI_EMBED_URL": "http://127.0.0.1:11434/v1",
            "LOCI_LLM_URL": "https://llm.example/v1",
            "LOCI_LLM_TIMEOUT": "30",
            "LOCI_METRICS_VECTORS_SECONDS": "0",
            "LOCI_EXTRACT_BUDGET_MS": "0",
        }
    )
    assert settings.embedder == "openai"
    assert Settings.from_env({"LOCI_EMBEDDER": "minilm", "LOCI_TORCH_THREADS": "4"}).embedder == "minilm"
