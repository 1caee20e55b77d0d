#!/usr/bin/env bash
# The README's supersession exchange (issue 4): an agent says "I live in Paris", later "I moved to
# Berlin"; an assemble about where the user lives returns Berlin as a fact and never Paris, and the
# list endpoint still shows Paris, superseded, with its valid_to. tests/test_docs.py runs it.
# Usage: B=http://127.0.0.1:8080 KEY=loci_... bash docs/examples/supersession.sh
set -euo pipefail
: "${B:=http://127.0.0.1:8080}"
: "${KEY:?set KEY to the API key printed by make serve}"
H=(-H "Authorization: Bearer $KEY" -H 'Content-Type: application/json')
c() { curl -sS --fail-with-body "$@"; echo; }
check() { python3 -c "import json,sys; d=json.load(sys.stdin); print(json.dumps(d, indent=1)[:1500]); assert $1, 'check failed'"; }

# each turn is stored (as an event) and its facts are extracted and ingested, with supersession
c -X POST "$B/v0/context/assemble" "${H[@]}" -d '{"entity_id":"ent:user","turn":"I live in Paris"}' \
  | check '[u["action"] for u in d["extracted"]["upserts"]] == ["UPSERTED", "UPSERTED"]'
c -X POST "$B/v0/context/assemble" "${H[@]}" -d '{"entity_id":"ent:user","turn":"I moved to Berlin"}' \
  | check 'd["extracted"]["upserts"][1]["action"] == "SUPERSEDED"'
# a read-only assemble (nothing extracted or stored): Berlin is the fact, Paris is not
c -X POST "$B/v0/context/assemble" "${H[@]}" \
  -d '{"entity_id":"ent:user","turn":"Where do I live?","ingest":{"extract":false,"store_turn":"none"}}' \
  | check 'any("Berlin" in f for f in d["context"]["facts"]) and not any("Paris" in f for f in d["context"]["facts"])'
# the history is kept: Paris is superseded, its valid_to is Berlin's valid_from
c "$B/v0/memories?entity_id=ent:user&type=fact" "${H[@]}" \
  | check '[(m["text"], m["status"], m["valid_to"] is not None) for m in d["items"]] == [("User lives in Berlin", "active", False), ("User lives in Paris", "superseded", True)]'
