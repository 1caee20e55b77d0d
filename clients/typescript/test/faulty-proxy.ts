// A TCP proxy in front of a real server that injects faults, one per request, in order: "drop" forwards
// the request, lets the server answer, then closes the client's connection without the answer (the write
// happened, the client never heard); "429" / "503" answer that status itself (Retry-After: 0) without
// forwarding; null forwards. It speaks enough HTTP/1.1 for fetch: Content-Length bodies, keep-alive.
import net from "node:net";

export type Fault = "drop" | "429" | "503" | null;

/** The HTTP messages (head and Content-Length body) arriving on `socket`. */
async function* messages(socket: net.Socket): AsyncGenerator<Buffer, void, undefined> {
  let buffer = Buffer.alloc(0);
  for await (const chunk of socket) {
    buffer = Buffer.concat([buffer, chunk as Buffer]);
    for (;;) {
      const head = buffer.indexOf("\r\n\r\n");
      if (head < 0) break;
      const found = /^content-length:\s*(\d+)/im.exec(buffer.subarray(0, head).toString("latin1"));
      const end = head + 4 + Number(found?.[1] ?? 0);
      if (buffer.length < end) break;
      yield buffer.subarray(0, end);
      buffer = buffer.subarray(end);
    }
  }
}

export class FaultyProxy {
  readonly requests: string[] = [];
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    private readonly server: net.Server,
    private readonly upstreamPort: number,
    private readonly faults: Fault[],
  ) {}

  static async start(upstreamPort: number, faults: Fault[]): Promise<FaultyProxy> {
    const server = net.createServer();
    const proxy = new FaultyProxy(server, upstreamPort, [...faults]);
    server.on("connection", (client) => {
      proxy.serve(client).catch(() => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return proxy;
  }

  get url(): string {
    const address = this.server.address() as net.AddressInfo;
    return `http://127.0.0.1:${address.port}`;
  }

  /** The distinct Idempotency-Key headers of the requests seen. */
  idempotencyKeys(): Set<string> {
    const keys = this.requests.flatMap((r) => r.split("\r\n").filter((l) => /^idempotency-key:/i.test(l)));
    return new Set(keys.map((l) => l.toLowerCase()));
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async serve(client: net.Socket): Promise<void> {
    const upstream = net.connect(this.upstreamPort, "127.0.0.1");
    this.sockets.add(client).add(upstream);
    const answers = messages(upstream);
    try {
      for await (const request of messages(client)) {
        this.requests.push(request.toString("latin1"));
        const fault = this.faults.shift() ?? null;
        if (fault === "429" || fault === "503") {
          client.write(
            `HTTP/1.1 ${fault} Busy\r\nRetry-After: 0\r\nContent-Type: application/json\r\n` +
              "Content-Length: 2\r\n\r\n{}",
          );
          continue;
        }
        upstream.write(request);
        const answer = await answers.next();
        if (answer.done || fault === "drop") return;
        client.write(answer.value);
      }
    } finally {
      client.destroy();
      upstream.destroy();
    }
  }
}
