"""The inspector at /ui: static HTML, CSS and ES modules shipped in the package (server/ui/), no build
step, no network access beyond this server. The files need no key; every data call the page makes goes
to the API with the key the user typed (kept in sessionStorage), so it sees what that key may see.

Every /ui response carries a Content-Security-Policy that allows this origin only.
"""

from __future__ import annotations

from pathlib import Path

from litestar import Response
from litestar.datastructures import CacheControlHeader
from litestar.static_files import create_static_files_router

UI_PATH = "/ui"
UI_DIR = Path(__file__).resolve().parent.parent / "ui"

#: same-origin scripts, styles, images and API calls only; no inline script, no frames, no forms posting away
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "font-src 'self'",
        "manifest-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


async def add_security_headers(response: Response) -> Response:  # type: ignore[type-arg]
    response.headers.update(SECURITY_HEADERS)
    return response


ROUTES = [
    create_static_files_router(
        path=UI_PATH,
        directories=[UI_DIR],
        html_mode=True,
        name="ui",
        include_in_schema=False,
        after_request=add_security_headers,
        cache_control=CacheControlHeader(no_cache=True),
    ),
]
