"""The README's SDK example: `LOCI_API_KEY=loci_... python docs/examples/sdk_quickstart.py`
(tests/integrations/test_sdk.py runs it against a real server)."""

from loci.client import AssembleRequest, LociClient, MemoryCreate, RecallRequest

with LociClient() as loci:  # $LOCI_URL (default http://127.0.0.1:8080) and $LOCI_API_KEY
    loci.create_memory(MemoryCreate(type="note", text="Alice prefers tea", entity_id="ent:alice"))
    loci.assemble(AssembleRequest(entity_id="ent:alice", turn="I moved to Berlin"))  # stores and supersedes
    context = loci.assemble(AssembleRequest(entity_id="ent:alice", turn="What should I order for Alice?"))
    print(context.context.facts, context.context.sources)
    print([m.text for m in loci.recall(RecallRequest(query="tea", entity_id="ent:alice")).matches])
    for memory in loci.iter_memories(entity_id="ent:alice"):  # every page, no repeats
        print(memory.memory_id, memory.type, memory.text)
