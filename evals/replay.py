"""Replay a dataset through Loci and turn each answer into a `QuestionRecord` for `evals.metrics`.

    dataset -> for each conversation: backend.load(conv)      (every turn, in time order)
            -> for each question:     backend.ask(loaded, q)  (as_of = the question's time)
            -> to_record(...) -> QuestionRecord -> metrics.score

Every conversation goes in through the engine functions the routes call (`write`):
- `batch` (bulk, as `POST /v0/memories` writes): each turn an `event` memory, text `<speaker>: <text>`,
  timestamp = the turn's time (its session's date + its position in seconds), metadata {turn_id,
  session}, entity_id = the conversation's entity (`ent:<conversation id>`), in a namespace of its
  own (`<prefix>-<conversation>`, the prefix new for each backend), in batches of 200
  (`MemoryService.prepare` + `insert`). With `extract=True` each turn whose
  speaker is not `assistant` then goes through assemble's ingest with the turn's time as `as_of`
  (`ingest.store_turn` none, first person = the speaker): the facts it finds, superseded as in
  production.
- `agent` (the loop agents run): each turn, in time order, through `POST /v0/context/assemble`
  (`engine.assemble`) with the API's default ingest and `as_of` = the turn's time: the turn
  `<speaker>: <text>` is stored as an event, its facts extracted (first person = the speaker its label
  names; an assistant's turn gives none) and superseded.
A fact counts as the turn it came from when ranks and contexts are mapped back to turns.

Two backends behind one protocol (`Backend`):
- `EngineBackend`: the engine in process, a store opened per conversation (`memory` by default; any
  `open_store` target: `sqlite://:memory:` is fresh each time, a file such as `sqlite:///path.db` one
  store for every conversation and run), the `hash` embedder by default.
- `HttpBackend`: a served API over httpx (the path agents use): POST /v0/memories in batches of up
  to 200, POST /v0/context/assemble with `Authorization: Bearer <key>`. A request the server refuses
  with 429 (its rate limit), or 503 with `Retry-After`, was not carried out: it is sent again after the
  advertised delay (the SDK's `RetryPolicy`, at most 60 s a wait, `RATE_RETRIES` times), so a replay
  records what it would have unthrottled; the waits do not count in its latencies.

Ranking: `matches` hold the shortlist (the `top_k` that ran, as `retrieval_summary.top_k` reports). When
`rank_depth` is larger, a second assemble with `top_k = rank_depth` gives the ranking for recall@k, so
the assembled context (first call) is exactly what the preset produces.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

import msgspec

from engine.errors import InvalidInput, Unavailable
from engine.retrieval.config import SPEC_TOP_K
from evals.metrics import (
    ContextFact,
    ContextLine,
    QuestionRecord,
    lines_with_turns,
    turn_needles,
    whole_turn_needles,
)
from evals.model import Conversation, Dataset, Question, Turn

ORG_ID = "org_eval"
ASSISTANT = "assistant"
SECTIONS: tuple[str, ...] = ("facts", "recent_events", "summary", "sources")


class ReplayConfig(msgspec.Struct, frozen=True, kw_only=True):
    preset: str | None = None  # None: the engine's default (balanced)
    normalization: str = "minmax"
    weights: dict[str, float] | None = None
    recency_half_life_days: int | None = None
    budget: int = 1200
    rank_depth: int = 50
    #: `return.max_events` / `return.max_facts` (None: the API defaults, 6 and 12)
    max_events: int | None = None
    max_facts: int | None = None
    #: more `retrieval` options merged into each request (e.g. {"top_k": 48}); keys override the above
    retrieval: dict[str, Any] | None = None
    #: `budget.tokenizer` (None: the API default, o200k_base)
    tokenizer: str | None = None
    extract: bool = True
    embedder: str = "hash"
    store: str = "memory"
    #: how turns are written: `batch` (POST /v0/memories, then facts) or `agent` (each turn through assemble)
    write: Literal["batch", "agent"] = "batch"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.casefold()).strip("-") or "x"


def entity_of(conversation: Conversation) -> str:
    return f"ent:{slug(conversation.conversation_id)}"


def run_prefix() -> str:
    """A namespace prefix new for each backend: `eval-` and six random hex digits."""
    return f"eval-{secrets.token_hex(3)}"


def namespace_of(prefix: str, conversation: Conversation) -> str:
    """Where a conversation is written and asked: `<prefix>-<conversation slug>`, at most 64 characters."""
    return f"{prefix}-{slug(conversation.conversation_id)}"[:64]


class Loaded(msgspec.Struct, kw_only=True):
    """A conversation written into a backend: where it lives and which memory came from which turn."""

    conversation_id: str
    entity_id: str
    namespace: str
    memory_to_turn: dict[str, str]
    write_ms: float = 0.0
    handle: Any = None  # backend-private (the store of this conversation)
    stored_facts: list[ContextFact] | None = None  # engine backend: the store's facts, read once

    def memories_of(self, turn_id: str) -> list[str]:
        return [m for m, t in self.memory_to_turn.items() if t == turn_id]


class Ranked(msgspec.Struct, frozen=True, kw_only=True):
    memory_id: str
    score: float
    type: str = "event"
    turn_id: str | None = None  # from metadata when the backend saw it


class Answer(msgspec.Struct, kw_only=True):
    """What one question got back, before mapping to turns."""

    ranked: list[Ranked]
    lines: list[tuple[str, str]]  # (section, rendered line)
    facts: list[ContextFact]
    tokens_used: int
    budget: int
    stage_ms: dict[str, float]
    #: how the context's tokens were counted (`trace.budget.tokenizer`; old servers: the estimate)
    tokenizer: str = "estimate"
    #: the store's facts of the question's predicate, any status (engine backend, probes only)
    stored_facts: list[ContextFact] | None = None


class Backend(Protocol):
    def load(self, conversation: Conversation, config: ReplayConfig) -> Loaded: ...

    def ask(self, loaded: Loaded, question: Question, config: ReplayConfig) -> Answer: ...

    def release(self, loaded: Loaded) -> None: ...


# --- requests (shared by both backends) --------------------------------------------------------------
def assemble_body(
    loaded: Loaded,
    question: Question,
    config: ReplayConfig,
    *,
    top_k: int | None = None,
    ranking_only: bool = False,
) -> dict[str, Any]:
    """The POST /v0/context/assemble body for a question (a plain JSON object, as on the wire)."""
    retrieval: dict[str, Any] = {"normalization": config.normalization}
    if config.preset:
        retrieval["preset"] = config.preset
    if config.weights:
        retrieval["weights"] = dict(config.weights)
    if config.recency_half_life_days is not None:  # a 0 goes to the API's check, never read as unset
        retrieval["recency_half_life_days"] = config.recency_half_life_days
    if config.retrieval:
        retrieval.update(config.retrieval)
    if top_k:
        retrieval["top_k"] = top_k
    ret: dict[str, Any] = {"include_raw_matches": True, "include_structured_facts": True, "trace": True}
    if config.max_events is not None:
        ret["max_events"] = config.max_events
    if config.max_facts is not None:
        ret["max_facts"] = config.max_facts
    if ranking_only:
        ret["include"] = ["facts"]
        ret["include_structured_facts"] = False
    return {
        "entity_id": loaded.entity_id,
        "namespace": loaded.namespace,
        "turn": question.text,
        "budget": {
            "max_context_tokens": config.budget,
            **({"tokenizer": config.tokenizer} if config.tokenizer else {}),
        },
        "policy": {"pii_redaction": "off"},
        "retrieval": retrieval,
        "return": ret,
        "ingest": {"extract": False, "store_turn": "none"},
        "as_of": question.asked_at.isoformat(),
    }


def ranking_body(
    loaded: Loaded, question: Question, config: ReplayConfig, ran_top_k: int | None
) -> dict[str, Any] | None:
    """The body of the deeper, ranking-only call for recall@k, or None when the assemble already ran
    that deep (`ran_top_k`: its `retrieval_summary.top_k`; the spec's default 24 when not reported)."""
    if config.rank_depth <= (ran_top_k or SPEC_TOP_K):
        return None
    return assemble_body(loaded, question, config, top_k=config.rank_depth, ranking_only=True)


def _probe() -> tuple[Loaded, Question]:
    """A stand-in conversation and question to build a configuration's requests with."""
    loaded = Loaded(conversation_id="check", entity_id="ent:check", namespace="check", memory_to_turn={})
    question = Question(
        question_id="check",
        conversation_id="check",
        text="check",
        answer=None,
        evidence=(),
        asked_at=datetime.now(UTC),
        category="check",
    )
    return loaded, question


def check_config(config: ReplayConfig) -> None:
    """The configuration's requests built and checked as the API checks them (an InvalidInput naming
    the option, as the API's 422 does), before anything is loaded, written or asked."""
    from engine.retrieval.config import resolve
    from engine.retrieval.options import AssembleRequest

    loaded, question = _probe()
    deep = ranking_body(loaded, question, config, None)
    for body in (assemble_body(loaded, question, config), *([deep] if deep is not None else [])):
        try:
            request = msgspec.convert(body, AssembleRequest, strict=False)
            resolve(request.retrieval, lines=request.return_.max_events + request.return_.max_facts)
        except msgspec.ValidationError as exc:  # "<problem> - at `$.retrieval.preset`"
            problem, _, at = str(exc).rpartition(" - at ")
            field = at.strip("`").removeprefix("$.") if problem else None
            raise InvalidInput(f"{field}: {problem}" if field else str(exc), field=field) from exc
        except InvalidInput as exc:
            where = f"{exc.field}: " if exc.field else ""
            raise InvalidInput(f"{where}{exc.message}", field=exc.field) from exc


def weights_used(config: ReplayConfig) -> dict[str, float]:
    """The channel weights the configuration's assembles run with, as the API resolves them: a weight
    left out takes the preset's value, and the vector is renormalized (`retrieval_summary.weights_used`)."""
    from engine.retrieval.config import resolve
    from engine.retrieval.options import AssembleRequest

    loaded, question = _probe()
    request = msgspec.convert(assemble_body(loaded, question, config), AssembleRequest, strict=False)
    weights = resolve(request.retrieval).weights
    return {str(k): round(float(v), 4) for k, v in msgspec.structs.asdict(weights).items()}


#: the API's longest memory text and turn: a longer turn (a few LongMemEval turns are) is cut to it, as a
#: client would have to
MAX_TEXT = 20000


def _event_item(loaded_entity: str, namespace: str, turn: Turn) -> dict[str, Any]:
    return {
        "type": turn.kind,
        "text": turn.memory_text()[:MAX_TEXT],
        "timestamp": turn.timestamp.isoformat(),
        "entity_id": loaded_entity,
        "namespace": namespace,
        "sensitivity": "none",
        "metadata": {"turn_id": turn.turn_id, "session": turn.session, "speaker": turn.speaker},
    }


def facts_body(loaded: Loaded, turn: Turn) -> dict[str, Any]:
    """The assemble body that ingests one turn's facts in `batch` mode: dated by `as_of` = the turn's
    time, the turn itself not stored again (it is an event already), "I" = the speaker."""
    return {
        "entity_id": loaded.entity_id,
        "namespace": loaded.namespace,
        "turn": turn.text[:MAX_TEXT],
        "as_of": turn.timestamp.isoformat(),
        "ingest": {"extract": True, "store_turn": "none", "subject": f"ent:{slug(turn.speaker)}"},
        "budget": {"max_context_tokens": 256},
        "return": {"include": ["facts"], "max_facts": 1},
    }


def agent_body(loaded: Loaded, turn: Turn) -> dict[str, Any]:
    """The assemble body of one turn in the agent loop: the API's defaults but the turn's time."""
    return {
        "entity_id": loaded.entity_id,
        "namespace": loaded.namespace,
        "turn": turn.memory_text()[:MAX_TEXT],
        "as_of": turn.timestamp.isoformat(),
    }


def map_upserts(loaded: Loaded, turn_id: str, extracted: dict[str, Any]) -> None:
    """Memories an assemble wrote count as the turn it ingested; a memory already mapped (a SKIPPED
    fact repeating an earlier one, a negation naming an earlier turn) keeps its turn."""
    for upsert in extracted.get("upserts") or []:
        memory_id = upsert.get("memory_id")
        if memory_id and upsert.get("action") != "SKIPPED":
            loaded.memory_to_turn.setdefault(memory_id, turn_id)


def _parse_dt(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _answer_from_json(
    main: dict[str, Any], ranking: dict[str, Any] | None, budget: int, stage_ms: dict[str, float]
) -> Answer:
    """Read an assemble response (as JSON) into an Answer; `ranking` is the deeper second call."""
    source = ranking if ranking is not None else main
    ranked = [
        Ranked(
            memory_id=m["memory_id"],
            score=float(m.get("score") or 0.0),
            type=str(m.get("type", "")),
            turn_id=(m.get("metadata") or {}).get("turn_id"),
        )
        for m in source.get("matches") or main.get("extracted", {}).get("matches") or []
    ]
    context = main.get("context") or {}
    lines: list[tuple[str, str]] = []
    for section in SECTIONS:
        value = context.get(section)
        if isinstance(value, str):
            if value:
                lines.append((section, value))
        else:
            lines.extend((section, str(v)) for v in value or [])
    facts = [
        ContextFact(
            text=f.get("text", ""),
            predicate=f.get("predicate"),
            status=f.get("status") or "active",
            valid_from=_parse_dt(f.get("valid_from")),
            valid_to=_parse_dt(f.get("valid_to")),
            memory_id=f.get("memory_id"),
        )
        for f in context.get("facts_struct") or []
    ]
    counts = context.get("token_counts") or {}
    used = int(counts.get("used") or 0)
    timings = ((main.get("trace") or {}).get("timings")) or {}
    stages = {k: float(v) for k, v in timings.items() if isinstance(v, int | float)}
    stages.update(stage_ms)
    tokenizer = str(((main.get("trace") or {}).get("budget") or {}).get("tokenizer") or "estimate")
    return Answer(
        ranked=ranked,
        lines=lines,
        facts=facts,
        tokens_used=used,
        budget=budget,
        stage_ms=stages,
        tokenizer=tokenizer,
    )


# --- the engine in process ---------------------------------------------------------------------------
class EngineBackend:
    """The engine in process: `config.store` opened for each conversation (released after its
    questions). Each conversation is written into a namespace of its own (`namespace_of`, with a prefix
    new for each backend), so on a store that outlives the conversation (a file target,
    `sqlite:///path.db`) it asks over its own turns only, not over an earlier run's too."""

    def __init__(
        self,
        config: ReplayConfig,
        *,
        clock: Callable[[], datetime] | None = None,
        namespace_prefix: str | None = None,
    ) -> None:
        from engine.extract import create_extractor
        from evals.vector_cache import cached_embedder

        self.embedder = cached_embedder(config.embedder)
        self.extractor = create_extractor("rules") if config.extract or config.write == "agent" else None
        self.clock = clock or (lambda: datetime.now(UTC))
        self.prefix = namespace_prefix if namespace_prefix is not None else run_prefix()

    def load(self, conversation: Conversation, config: ReplayConfig) -> Loaded:
        from engine.assemble import Engine
        from engine.embed.cache import EmbeddingCache
        from engine.memory_service import MemoryCreate, MemoryService
        from engine.storage import open_store

        start = time.perf_counter()
        store = open_store(config.store)
        cache = EmbeddingCache(self.embedder, store)
        engine = Engine(store=store, embeddings=cache, extractor=self.extractor)
        loaded = Loaded(
            conversation_id=conversation.conversation_id,
            entity_id=entity_of(conversation),
            namespace=namespace_of(self.prefix, conversation),
            memory_to_turn={},
            handle=(store, cache),
        )
        turns = list(conversation.turns)
        service = MemoryService(store, embeddings=cache, clock=self.clock)
        if config.write == "agent":
            for turn in turns:
                if turn.kind != "event":  # a fact, note or document is written, not said
                    item = msgspec.convert(
                        _event_item(loaded.entity_id, loaded.namespace, turn), MemoryCreate, strict=False
                    )
                    loaded.memory_to_turn[service.create(ORG_ID, [item])[0].memory_id] = turn.turn_id
                    continue
                map_upserts(loaded, turn.turn_id, self._assemble(engine, agent_body(loaded, turn)))
        else:
            for batch_start in range(0, len(turns), 200):
                batch = turns[batch_start : batch_start + 200]
                drafts = [
                    msgspec.convert(
                        _event_item(loaded.entity_id, loaded.namespace, t), MemoryCreate, strict=False
                    )
                    for t in batch
                ]
                for turn, memory in zip(batch, service.create(ORG_ID, drafts), strict=True):
                    loaded.memory_to_turn[memory.memory_id] = turn.turn_id
            if self.extractor is not None:
                for turn in turns:
                    if turn.speaker.casefold() != ASSISTANT:
                        map_upserts(loaded, turn.turn_id, self._assemble(engine, facts_body(loaded, turn)))
        loaded.write_ms = (time.perf_counter() - start) * 1000.0
        return loaded

    def _assemble(self, engine: Any, body: dict[str, Any]) -> dict[str, Any]:
        """One assemble with ingest through the engine flow the route runs; its `extracted`."""
        from engine.assemble import assemble_turn
        from engine.retrieval.options import AssembleRequest

        request = msgspec.convert(body, AssembleRequest, strict=False)
        prepared = assemble_turn(
            engine,
            org_id=ORG_ID,
            agent_id=None,
            request=request,
            request_id="req_eval_write",
            now=self.clock(),
        )
        extracted: dict[str, Any] = msgspec.to_builtins(prepared.response.extracted)
        return extracted

    def ask(self, loaded: Loaded, question: Question, config: ReplayConfig) -> Answer:
        from engine.retrieval.options import AssembleRequest
        from engine.retrieval.pipeline import run_assemble

        store, cache = loaded.handle
        request = msgspec.convert(assemble_body(loaded, question, config), AssembleRequest, strict=False)
        t = time.perf_counter()
        outcome = run_assemble(
            store,
            cache,
            org_id=ORG_ID,
            agent_id=None,
            request=request,
            request_id="req_eval",
            now=self.clock(),
        )
        stage_ms = {"assemble": (time.perf_counter() - t) * 1000.0}
        ranking = None
        deep_body = ranking_body(loaded, question, config, outcome.response.retrieval_summary.top_k)
        if deep_body is not None:
            deep = msgspec.convert(deep_body, AssembleRequest, strict=False)
            ranking = msgspec.to_builtins(
                run_assemble(
                    store,
                    cache,
                    org_id=ORG_ID,
                    agent_id=None,
                    request=deep,
                    request_id="req_eval_rank",
                    now=self.clock(),
                ).response
            )
        main = msgspec.to_builtins(outcome.response)
        stage_ms.update({k: float(v) for k, v in msgspec.structs.asdict(outcome.timings).items()})
        answer = _answer_from_json(main, ranking, config.budget, stage_ms)
        if question.predicate:
            answer.stored_facts = [f for f in self._stored_facts(loaded) if f.predicate == question.predicate]
        return answer

    def _stored_facts(self, loaded: Loaded) -> list[ContextFact]:
        """Every fact of the conversation's entity in the store, any status (read once, cached)."""
        from engine.storage.base import ListQuery

        if loaded.stored_facts is None:
            store = loaded.handle[0]
            query = ListQuery(
                namespace=loaded.namespace, entity_id=loaded.entity_id, types=("fact",), limit=100_000
            )
            loaded.stored_facts = [
                ContextFact(
                    text=m.text,
                    predicate=m.predicate,
                    status=m.status,
                    valid_from=m.valid_from,
                    valid_to=m.valid_to,
                    memory_id=m.memory_id,
                )
                for m in store.list_memories(ORG_ID, query)
            ]
        return loaded.stored_facts

    def release(self, loaded: Loaded) -> None:
        store = loaded.handle[0] if loaded.handle else None
        close = getattr(store, "close", None)
        if callable(close):
            close()
        loaded.handle = None


# --- a served API over HTTP --------------------------------------------------------------------------
#: how many times one request is sent again after a 429 (or a 503 with Retry-After)
RATE_RETRIES = 8


def check_base_url(url: str) -> None:
    """InvalidInput unless `url` is http(s)://host...: httpx reads `localhost:9` as the scheme `localhost`."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidInput(
            f"--http {url!r} is not an http:// or https:// URL (or 'local' for the app in process)",
            field="http",
        )


def _server_message(response: Any) -> str:
    """The error envelope's `message`, on one line, when the answer has one."""
    try:
        body = response.json()
    except ValueError:
        return ""
    message = body.get("message") if isinstance(body, dict) else None
    return f": {' '.join(str(message).split())}" if message else ""


class HttpBackend:
    """A served API: turns written as `config.write` says (see the module docstring), questions through
    POST /v0/context/assemble.
    Each conversation gets its own namespace (`<prefix>-<conversation slug>`, max 64 characters); the
    default prefix, `eval-` and six random hex digits, is new for each backend, so a second run against
    the same server does not ask over the first run's memories as well as its own."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        namespace_prefix: str | None = None,
        client: Any = None,
        timeout: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import httpx

        from loci.client.retry import RetryPolicy

        self.base_url = base_url.rstrip("/")
        self.client = client or httpx.Client(base_url=base_url, timeout=timeout)
        self.headers = {"Authorization": f"Bearer {api_key}"}
        self.prefix = namespace_prefix if namespace_prefix is not None else run_prefix()
        self.retry = RetryPolicy(max_retries=RATE_RETRIES)
        self.sleep = sleep
        self.waited = 0.0  # seconds slept before retries, left out of the latencies

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        import httpx

        url = f"{self.base_url}{path}"
        for attempt in range(self.retry.max_retries + 1):
            try:
                response = self.client.post(path, json=body, headers=self.headers)
            except httpx.TransportError as exc:  # not sent again: a write may have been carried out
                raise Unavailable(f"POST {url}: no answer ({exc or type(exc).__name__})") from exc
            retry_after = response.headers.get("Retry-After")
            if not (response.status_code == 429 or (response.status_code == 503 and retry_after is not None)):
                break
            if attempt == self.retry.max_retries:
                raise Unavailable(
                    f"POST {url}: the server answered {response.status_code} "
                    f"{attempt + 1} times (its rate limit, LOCI_RATE_LIMIT, or it is unavailable)"
                )
            wait = self.retry.delay(attempt, retry_after)
            self.sleep(wait)
            self.waited += wait
        if not response.is_success:  # a redirect too: its body is not the API's answer
            raise Unavailable(
                f"POST {url}: the server answered {response.status_code} {response.reason_phrase}"
                f"{_server_message(response)}"
            )
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):  # a proxy's page or another service: not an answer to replay
            raise Unavailable(
                f"POST {url}: the server answered {response.status_code} {response.reason_phrase} "
                "with no JSON object (is it the Loci API?)"
            )
        return data

    def _elapsed_ms(self, start: float, waited: float) -> float:
        """Milliseconds since `start` (perf_counter), less the retry waits since `waited`."""
        return (time.perf_counter() - start - (self.waited - waited)) * 1000.0

    def load(self, conversation: Conversation, config: ReplayConfig) -> Loaded:
        start, waited = time.perf_counter(), self.waited
        namespace = namespace_of(self.prefix, conversation)
        loaded = Loaded(
            conversation_id=conversation.conversation_id,
            entity_id=entity_of(conversation),
            namespace=namespace,
            memory_to_turn={},
        )
        turns = list(conversation.turns)
        if config.write == "agent":
            for turn in turns:
                if turn.kind != "event":  # as EngineBackend: a fact, note or document is written, not said
                    item = _event_item(loaded.entity_id, namespace, turn)
                    created = self._post("/v0/memories", {"items": [item]})["items"]
                    loaded.memory_to_turn[created[0]["memory_id"]] = turn.turn_id
                    continue
                extracted = (
                    self._post("/v0/context/assemble", agent_body(loaded, turn)).get("extracted") or {}
                )
                map_upserts(loaded, turn.turn_id, extracted)
            loaded.write_ms = self._elapsed_ms(start, waited)
            return loaded
        for batch_start in range(0, len(turns), 200):
            batch = turns[batch_start : batch_start + 200]
            items = [_event_item(loaded.entity_id, namespace, t) for t in batch]
            created = self._post("/v0/memories", {"items": items})["items"]
            for turn, memory in zip(batch, created, strict=True):
                loaded.memory_to_turn[memory["memory_id"]] = turn.turn_id
        if config.extract:
            for turn in turns:
                if turn.speaker.casefold() != ASSISTANT:
                    extracted = (
                        self._post("/v0/context/assemble", facts_body(loaded, turn)).get("extracted") or {}
                    )
                    map_upserts(loaded, turn.turn_id, extracted)
        loaded.write_ms = self._elapsed_ms(start, waited)
        return loaded

    def ask(self, loaded: Loaded, question: Question, config: ReplayConfig) -> Answer:
        t, waited = time.perf_counter(), self.waited
        main = self._post("/v0/context/assemble?trace=true", assemble_body(loaded, question, config))
        stage_ms = {"http": self._elapsed_ms(t, waited)}
        ranking = None
        body = ranking_body(loaded, question, config, (main.get("retrieval_summary") or {}).get("top_k"))
        if body is not None:
            ranking = self._post("/v0/context/assemble", body)
        return _answer_from_json(main, ranking, config.budget, stage_ms)

    def release(self, loaded: Loaded) -> None:
        return None

    def close(self) -> None:
        self.client.close()


# --- the driver --------------------------------------------------------------------------------------
def to_record(
    question: Question, conversation: Conversation, loaded: Loaded, answer: Answer
) -> QuestionRecord:
    """Map memory ids back to turns: ranks (a fact counts as its source turn), and which evidence
    turns reached the rendered context (by memory id or by the start of the turn's text)."""
    ranked = [r.turn_id or loaded.memory_to_turn.get(r.memory_id) for r in answer.ranked]
    turn_map = conversation.turn_map()
    needles = {tid: turn_needles(turn_map[tid].text, loaded.memories_of(tid)) for tid in question.evidence}
    fact_turns = {f.memory_id: loaded.memory_to_turn.get(f.memory_id or "") for f in answer.facts}
    texts = [text for _, text in answer.lines]
    found = lines_with_turns(texts, needles)
    whole = lines_with_turns(
        texts,
        {tid: whole_turn_needles(turn_map[tid].text, loaded.memories_of(tid)) for tid in question.evidence},
    )
    from engine.retrieval.tokens import get_tokenizer

    line_tokens = get_tokenizer(answer.tokenizer).line_tokens
    lines = []
    for (section, text), turn_ids, whole_ids in zip(answer.lines, found, whole, strict=True):
        ids, whole_set = set(turn_ids), set(whole_ids)
        if section == "facts":  # a fact line names no turn: match it to its fact's source turn
            of_facts = {
                t
                for f in answer.facts
                if f.text and f.text in text
                for t in [fact_turns.get(f.memory_id)]
                if t in needles
            }
            ids |= of_facts
            whole_set |= of_facts
        lines.append(
            ContextLine(
                section=section,
                text=text,
                tokens=line_tokens(text),
                turn_ids=tuple(sorted(ids)),
                whole_turn_ids=tuple(sorted(whole_set)),
            )
        )
    return QuestionRecord(
        question_id=question.question_id,
        conversation_id=question.conversation_id,
        category=question.category,
        answerable=question.answerable,
        evidence=question.evidence,
        ranked=tuple(t for t in ranked if t is not None),
        lines=tuple(lines),
        context_tokens=answer.tokens_used,
        budget=answer.budget,
        as_of=question.asked_at,
        predicate=question.predicate,
        current_values=question.current_values,
        stale_values=question.stale_values,
        facts=tuple(answer.facts),
        stored_facts=None if answer.stored_facts is None else tuple(answer.stored_facts),
        stage_ms=answer.stage_ms,
    )


def iter_replay(
    dataset: Dataset,
    backend: Backend,
    config: ReplayConfig,
    *,
    questions: Callable[[Question], bool] | None = None,
) -> Iterator[QuestionRecord]:
    """Records question by question (conversation by conversation); `questions` filters them."""
    for conversation in dataset.conversations:
        asked = [
            q
            for q in dataset.questions_for(conversation.conversation_id)
            if questions is None or questions(q)
        ]
        if not asked:
            continue
        loaded = backend.load(conversation, config)
        try:
            for question in asked:
                yield to_record(question, conversation, loaded, backend.ask(loaded, question, config))
        finally:
            backend.release(loaded)


def replay(
    dataset: Dataset,
    backend: Backend,
    config: ReplayConfig,
    *,
    progress: bool = False,
    questions: Callable[[Question], bool] | None = None,
) -> list[QuestionRecord]:
    records: Iterable[QuestionRecord] = iter_replay(dataset, backend, config, questions=questions)
    if progress:
        from tqdm import tqdm

        total = sum(1 for q in dataset.questions if questions is None or questions(q))
        records = tqdm(records, total=total, unit="q")
    return list(records)


def evidence_questions(q: Question) -> bool:
    """Questions that count for recall or supersession (LoCoMo categories 1-4 with evidence, ...)."""
    return (q.answerable and bool(q.evidence)) or bool(q.current_values or q.stale_values)


__all__: Sequence[str] = (
    "Answer",
    "Backend",
    "EngineBackend",
    "HttpBackend",
    "Loaded",
    "Ranked",
    "ReplayConfig",
    "assemble_body",
    "entity_of",
    "evidence_questions",
    "iter_replay",
    "replay",
    "to_record",
    "weights_used",
)
