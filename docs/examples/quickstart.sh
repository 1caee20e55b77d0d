#!/usr/bin/env bash
# The README quickstart, as a script that tests/test_docs.py runs against a real server.
# Usage: B=http://127.0.0.1:8080 KEY=loci_... bash docs/examples/quickstart.sh
set -euo pipefail
: "${B:=http://127.0.0.1:8080}"
: "${KEY:?set KEY to the API key printed by make serve}"
H=(-H "Authorization: Bearer $KEY" -H 'Content-Type: application/json')
c() { curl -sS --fail-with-body "$@"; echo; }
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

c "$B/v0/health"
# create one memory, then two more in one batch (safe to retry thanks to the Idempotency-Key)
ID=$(c -X POST "$B/v0/memories" "${H[@]}" \
  -d '{"type":"fact","text":"Alice lives in Paris","entity_id":"ent:alice","tags":["home"]}' | tail -n1 | field memory_id)
c -X POST "$B/v0/memories" "${H[@]}" -H 'Idempotency-Key: batch-1' \
  -d '{"items":[{"type":"event","text":"Alice visited Rome","entity_id":"ent:alice"},{"type":"note","text":"Alice likes tea","entity_id":"ent:alice"}]}'
# list two at a time, then the next page
CURSOR=$(c "$B/v0/memories?entity_id=ent:alice&page_size=2" "${H[@]}" | field next_cursor)
c "$B/v0/memories?entity_id=ent:alice&page_size=2&cursor=$CURSOR" "${H[@]}"
# patch and delete
c -X PATCH "$B/v0/memories/$ID" "${H[@]}" -d '{"tags":["travel"],"archived":true}'
c -X DELETE "$B/v0/memories/$ID" "${H[@]}"
