// The API's own JSON shapes, named: every alias points into the types generated from the server's
// OpenAPI document (openapi.ts), so a body or an answer cannot drift from what the server accepts.
import type { components, operations } from "./openapi.js";

type Schemas = components["schemas"];

/** The JSON body of an operation's request. */
export type RequestBody<Op extends keyof operations> = operations[Op] extends {
  requestBody: { content: { "application/json": infer B } };
}
  ? B
  : never;

/** The JSON answer of an operation (its 200 response). */
export type Answer<Op extends keyof operations> = operations[Op] extends {
  responses: { 200: { content: { "application/json": infer A } } };
}
  ? A
  : never;

/** The query parameters of an operation. */
export type Query<Op extends keyof operations> = NonNullable<operations[Op]["parameters"]["query"]>;

export type Health = Answer<"getHealth">;
export type Memory = Schemas["Memory"];
export type MemoryCreate = Schemas["MemoryCreate"];
export type MemoryBatch = Schemas["MemoryBatch"];
export type MemoryItems = Schemas["MemoryItems"];
export type MemoryPatch = Schemas["MemoryPatch"];
export type MemoryList = Answer<"listMemories">;
export type ListMemoriesQuery = Query<"listMemories">;
export type Deleted = Answer<"deleteMemory">;
export type AssembleRequest = Schemas["AssembleRequest"];
export type AssembleResponse = Answer<"assembleContext">;
export type RecallRequest = Schemas["RecallRequest"];
export type RecallResponse = Answer<"recall">;
export type Match = Schemas["Match"];
export type SummarizeRequest = Schemas["SummarizeRequest"];
export type SummarizeResponse = Answer<"summarize">;
export type PruneRequest = Schemas["PruneRequest"];
export type PruneResult = Answer<"pruneMemories">;
export type EventItem = Schemas["EventItem"];
export type EventList = Answer<"listEvents">;
export type ListEventsQuery = Query<"listEvents">;
export type ErrorBody = Schemas["ErrorBody"];

/** What the live stream takes: the event filters, `after` (resume after this cursor), and `max_events` /
 * `timeout` (seconds) that end it on the server's side. */
export type EventStreamQuery = Omit<ListEventsQuery, "limit" | "cursor"> & { after?: string | null };

/** One event of the live stream. */
export interface StreamedEvent {
  /** Where to resume after this event (`after`, sent as Last-Event-ID). */
  cursor: string;
  type: string;
  item: EventItem;
}

export type { components, operations, paths } from "./openapi.js";
