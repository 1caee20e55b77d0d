"""The clients' server URL (argument, else $LOCI_URL): one that is no http(s) URL is refused when the
client is made, and `loci mcp` says so in one line; it failed at the first call, retried as a
ConnectionFailed, and `loci mcp` served a protocol whose every tool call failed."""

from __future__ import annotations

import pytest

from loci.client import AsyncLociClient, LociClient
from loci.client.errors import InvalidRequest
from server.cli import main

BAD = ["not a url", "127.0.0.1:8080", "ftp://loci.example", "http://"]


@pytest.mark.parametrize("url", BAD)
def test_a_url_that_is_no_http_url_is_refused_up_front(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidRequest, match="LOCI_URL"):
        LociClient(url, "loci_key")
    with pytest.raises(InvalidRequest, match="LOCI_URL"):
        AsyncLociClient(url, "loci_key")
    monkeypatch.setenv("LOCI_URL", url)
    with pytest.raises(InvalidRequest, match="LOCI_URL"):
        LociClient(api_key="loci_key")


def test_loci_mcp_refuses_it_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOCI_URL", "127.0.0.1:8080")
    assert main(["mcp", "--key", "loci_key"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the server URL") and err.count("\n") == 1, err


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080", "https://loci.example/api/", "http://[::1]:8080"])
def test_http_urls_pass(url: str) -> None:
    LociClient(url, "loci_key").close()
