"""The framework adapters live behind extras: the server and the core client install no framework, the
development environment has both, and an adapter imported without its extra says which one to install."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = {"langgraph": ("langgraph", "langgraph"), "openai-agents": ("openai-agents", "agents")}


def _name(requirement: str) -> str:
    return requirement.split(">")[0].split("<")[0].split("=")[0].split("[")[0].split(";")[0].strip().lower()


def test_the_extras_hold_the_frameworks_and_dev_has_both() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {_name(r) for r in project["dependencies"]}
    extras = project["optional-dependencies"]
    for extra, (distribution, _) in FRAMEWORKS.items():
        assert distribution not in core
        assert [_name(r) for r in extras[extra]] == [distribution]
    dev_extras = extras["dev"][0].split("[")[1].rstrip("]").split(",")
    assert set(FRAMEWORKS) <= set(dev_extras)


def test_the_core_client_loads_no_framework() -> None:
    code = (
        "import sys, loci.client, loci.integrations\n"
        "print(','.join(m for m in ('langgraph', 'agents', 'langchain_core', 'openai') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize(
    ("extra", "module"), [("langgraph", "langgraph"), ("openai-agents", "openai_agents")]
)
def test_an_adapter_without_its_extra_names_the_extra(extra: str, module: str) -> None:
    framework = FRAMEWORKS[extra][1]
    code = (
        f"import sys; sys.modules[{framework!r}] = None\n"  # what Python does when the package is absent
        "try:\n"
        f"    import loci.integrations.{module}\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert f"pip install 'loci[{extra}]'" in out.stdout
    assert f"loci.integrations.{module}" in out.stdout
