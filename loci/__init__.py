"""Loci's Python client library: `loci.client`, and `loci.wire`, the API's records it shares with the
server (the server is `server`, the engine `engine`)."""
