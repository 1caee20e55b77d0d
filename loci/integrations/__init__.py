"""Framework adapters on the Python client, each behind an extra so the core install pulls in no framework:

- `loci.integrations.langgraph`: `LociStore`, a LangGraph `BaseStore` (`pip install 'loci[langgraph]'`);
- `loci.integrations.openai_agents`: `LociSession`, an OpenAI Agents SDK session
  (`pip install 'loci[openai-agents]'`).

How each maps onto Loci's memories: docs/integrations.md.
"""
