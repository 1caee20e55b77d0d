// The README's TypeScript example (tests/integrations/test_typescript_client.py runs it against a real
// server, with the package installed from its npm pack tarball).
import { LociClient } from "loci-client";

const loci = new LociClient(); // $LOCI_URL and $LOCI_API_KEY, or new LociClient({ baseUrl, apiKey })
await loci.createMemory({ type: "note", text: "Alice prefers tea", entity_id: "ent:alice" });
await loci.assemble({ entity_id: "ent:alice", turn: "I moved to Berlin" }); // stores and supersedes
const { context } = await loci.assemble({ entity_id: "ent:alice", turn: "What should I order for Alice?" });
console.log(context.facts, context.sources);
const { matches } = await loci.recall({ query: "tea", entity_id: "ent:alice" });
console.log(matches.map((m) => m.text));
for await (const memory of loci.iterMemories({ entity_id: "ent:alice" })) {
  console.log(memory.memory_id, memory.type, memory.text); // every page, no repeats
}
