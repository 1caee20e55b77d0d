"""The error an adapter raises when its framework is not installed: it names the extra to install."""

from __future__ import annotations


def missing_extra(module: str, extra: str, cause: ImportError) -> ImportError:
    return ImportError(
        f"{module} needs the {extra!r} extra: pip install 'loci[{extra}]' (import failed: {cause})",
        name=cause.name,
    )
