"""The read path: retrieve -> normalize -> fuse -> boost -> diversify -> rerank -> budget -> render.

Entry points: `pipeline.assemble` (POST /v0/context/assemble) and `pipeline.recall` (POST /v0/recall).
Wire records live in `options` (requests) and `responses`.
"""
