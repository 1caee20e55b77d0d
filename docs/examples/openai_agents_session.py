"""The README's OpenAI Agents SDK example: a conversation whose history lives in Loci, one event per item
(tests/integrations/test_openai_agents_session.py runs `main` with a scripted model against a real server)."""

import asyncio

from agents import Agent, Model, Runner

from loci.integrations.openai_agents import LociSession


async def main(model: str | Model = "gpt-4.1-mini") -> None:
    agent = Agent(name="Assistant", instructions="Reply in one sentence.", model=model)
    session = LociSession("conversation-42", entity_id="ent:alice")  # $LOCI_URL and $LOCI_API_KEY
    await Runner.run(agent, "My favourite tea is sencha.", session=session)
    result = await Runner.run(agent, "What is my favourite tea?", session=session)  # sees the first turn
    print(result.final_output)
    print([item.get("role", item.get("type")) for item in await session.get_items()])


if __name__ == "__main__":
    asyncio.run(main())
