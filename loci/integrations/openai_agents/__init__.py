"""An OpenAI Agents SDK session on Loci: `from loci.integrations.openai_agents import LociSession` (extra
`openai-agents`).

    session = LociSession("conversation-42")  # $LOCI_URL, $LOCI_API_KEY
    result = await Runner.run(agent, "Hello", session=session)

What is stored, what works and what does not: docs/integrations.md, "OpenAI Agents SDK session".
"""

from loci.integrations.extras import missing_extra

try:
    import agents.memory  # noqa: F401
except ImportError as exc:
    raise missing_extra("loci.integrations.openai_agents", "openai-agents", exc) from exc

from loci.integrations.openai_agents.session import LociSession  # noqa: E402

__all__ = ["LociSession"]
