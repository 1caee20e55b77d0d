"""Loci's Python client library: `loci.client` (the server is `server`, the engine `engine`)."""
