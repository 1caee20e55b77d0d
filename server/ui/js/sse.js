// A server-sent-events parser for fetch() streams (EventSource cannot send an Authorization header).
// Follows the WHATWG event-stream rules for the fields Loci sends: id, event, data, retry, comments.

export class SseParser {
  constructor() {
    this.buffer = "";
    this.reset();
    this.lastEventId = null;
    this.retry = null;
  }

  reset() {
    this.id = null;
    this.event = "";
    this.data = [];
  }

  /** Feed decoded text; returns the events completed by it: {id, event, data}. */
  push(text) {
    this.buffer += text;
    const out = [];
    let start = 0;
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer.slice(start));
      if (!match) break;
      const line = this.buffer.slice(start, start + match.index);
      // a lone \r at the very end may be half of \r\n: wait for more text
      if (match[0] === "\r" && start + match.index + 1 === this.buffer.length) break;
      start += match.index + match[0].length;
      const done = this.line(line);
      if (done) out.push(done);
    }
    this.buffer = this.buffer.slice(start);
    return out;
  }

  line(line) {
    if (line === "") {
      if (!this.data.length) {
        this.reset();
        return null;
      }
      const event = { id: this.id ?? this.lastEventId, event: this.event || "message", data: this.data.join("\n") };
      this.reset();
      return event;
    }
    if (line.startsWith(":")) return null; // a comment (keep-alive)
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "data") this.data.push(value);
    else if (name === "event") this.event = value;
    else if (name === "id" && !value.includes("\0")) {
      this.id = value;
      this.lastEventId = value;
    } else if (name === "retry" && /^\d+$/.test(value)) this.retry = Number(value);
    return null;
  }
}
