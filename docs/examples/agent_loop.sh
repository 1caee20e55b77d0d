#!/usr/bin/env bash
# The README's agent loop: each user turn goes to assemble (the default ingest stores it as an event
# and extracts its facts), and a later turn worded differently gets it back in its context.
# tests/test_docs.py runs it. Usage: B=http://127.0.0.1:8080 KEY=loci_... bash docs/examples/agent_loop.sh
set -euo pipefail
: "${B:=http://127.0.0.1:8080}"
: "${KEY:?set KEY to the API key printed by make serve}"
H=(-H "Authorization: Bearer $KEY" -H 'Content-Type: application/json')
c() { curl -sS --fail-with-body "$@"; echo; }
check() { python3 -c "import json,sys; d=json.load(sys.stdin); print(json.dumps(d, indent=1)[:1500]); assert $1, 'check failed'"; }

# turn 1 and 2: stored as events; "I moved to Lisbon" also becomes the fact lives_in = Lisbon
c -X POST "$B/v0/context/assemble" "${H[@]}" \
  -d '{"entity_id":"ent:sam","turn":"I booked the dentist for Tuesday at 3pm."}' \
  | check '[u["action"] for u in d["extracted"]["upserts"]] == ["UPSERTED"]'
c -X POST "$B/v0/context/assemble" "${H[@]}" -d '{"entity_id":"ent:sam","turn":"I moved to Lisbon last month."}' \
  | check '[u["action"] for u in d["extracted"]["upserts"]] == ["UPSERTED", "UPSERTED"]'
# turn 3 asks in other words: its context holds the stored turn and the fact (retrieval runs before
# this turn's own writes)
c -X POST "$B/v0/context/assemble" "${H[@]}" \
  -d '{"entity_id":"ent:sam","turn":"When do I see the dentist, and where do I live now?"}' \
  | check 'any("dentist for Tuesday" in e for e in d["context"]["recent_events"]) and any("Lisbon" in f for f in d["context"]["facts"])'
# recall finds it too (turn 3 was stored as well: the agent loop keeps every turn)
c -X POST "$B/v0/recall" "${H[@]}" -d '{"entity_id":"ent:sam","query":"when is my dentist appointment?"}' \
  | check '"I booked the dentist for Tuesday at 3pm." in [m["text"] for m in d["matches"][:2]]'
