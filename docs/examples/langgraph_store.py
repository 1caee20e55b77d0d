"""The README's LangGraph example: a graph that remembers what the user says, across threads, in Loci
(tests/integrations/test_langgraph_store.py runs it against a real server)."""

import uuid

from langgraph.graph import START, MessagesState, StateGraph
from langgraph.runtime import Runtime

from loci.integrations.langgraph import LociStore


def chat(state: MessagesState, runtime: Runtime) -> dict:
    said = state["messages"][-1].content
    known = runtime.store.search(("memories", "alice"), query=said, limit=3)  # ranked by Loci's recall
    runtime.store.put(("memories", "alice"), str(uuid.uuid4()), {"text": said})
    return {"messages": [("ai", "I recall: " + "; ".join(item.value["text"] for item in known))]}


with LociStore() as store:  # $LOCI_URL and $LOCI_API_KEY
    graph = StateGraph(MessagesState).add_node(chat).add_edge(START, "chat").compile(store=store)
    graph.invoke({"messages": [("user", "I drink green tea every morning")]})
    answer = graph.invoke({"messages": [("user", "Which tea do I drink?")]})
    print(answer["messages"][-1].content)  # I recall: I drink green tea every morning
