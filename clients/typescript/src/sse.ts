// A parser of the server-sent-event stream of GET /v0/observability/events: `id:` the event's cursor,
// `event:` its type, `data:` the event item as JSON; comments and `retry:` are skipped.
import { UnexpectedAnswer } from "./errors.js";
import type { EventItem, StreamedEvent } from "./types.js";

export const EVENT_STREAM = "text/event-stream";

export class SseParser {
  /** `status`: the stream's answer status, for the UnexpectedAnswer of data that is not JSON. */
  constructor(private readonly status = 200) {}

  private buffer = "";
  private id: string | null = null;
  private type = "message";
  private data: string[] = [];

  /** Feed decoded text; answers the events it completed. */
  push(text: string): StreamedEvent[] {
    this.buffer += text;
    const out: StreamedEvent[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (match === null) break;
      // a lone \r at the very end may be half of \r\n: wait for more text
      if (match[0] === "\r" && match.index + 1 === this.buffer.length) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      const event = this.feed(line);
      if (event !== null) out.push(event);
    }
    return out;
  }

  private feed(line: string): StreamedEvent | null {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "id") this.id = value;
    else if (name === "event") this.type = value;
    else if (name === "data") this.data.push(value);
    return null;
  }

  private dispatch(): StreamedEvent | null {
    const data = this.data.join("\n");
    const cursor = this.id;
    const type = this.type;
    this.data = [];
    this.type = "message";
    if (data === "" || cursor === null) return null;
    let item: EventItem;
    try {
      item = JSON.parse(data) as EventItem;
    } catch (error) {
      const message = `event ${cursor}: its data is not JSON`;
      throw new UnexpectedAnswer(message, this.status, null, { cause: error });
    }
    return { cursor, type, item };
  }
}
