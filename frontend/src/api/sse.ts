/**
 * Incremental parser for `text/event-stream` bodies, following the WHATWG
 * "event stream interpretation" rules. It is fed decoded text in arbitrary
 * chunks (a network read can end anywhere: mid-line, between CR and LF, mid-event)
 * and yields complete events and comment lines.
 */

export interface SseEvent {
  type: "event";
  /** Event name; "message" when the stream named none. */
  event: string;
  /** Data lines joined by "\n". */
  data: string;
  /** Last event id seen so far in the stream (ids persist across events per the spec). */
  id: string | null;
  /** Reconnection time in ms if this event carried a `retry:` field. */
  retry?: number;
}

export interface SseComment {
  type: "comment";
  /** Text after the leading ":" (one leading space removed), e.g. "ping". */
  text: string;
}

export type SseMessage = SseEvent | SseComment;

export class SseParser {
  private buffer = "";
  private pendingCR = false;
  private started = false;
  private dataLines: string[] = [];
  private hasData = false;
  private eventName = "";
  private retry: number | undefined;
  private lastEventId: string | null;

  constructor(initialLastEventId: string | null = null) {
    this.lastEventId = initialLastEventId;
  }

  /** The id to send as `Last-Event-ID` when reconnecting. */
  get lastId(): string | null {
    return this.lastEventId;
  }

  feed(chunk: string): SseMessage[] {
    let text = chunk;
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    // A CR ending the previous chunk already terminated a line; swallow its LF.
    if (this.pendingCR) {
      this.pendingCR = false;
      if (text.startsWith("\n")) text = text.slice(1);
    }
    this.buffer += text;
    const out: SseMessage[] = [];
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const ch = this.buffer[i];
      if (ch !== "\n" && ch !== "\r") continue;
      const line = this.buffer.slice(start, i);
      if (ch === "\r") {
        if (i + 1 < this.buffer.length) {
          if (this.buffer[i + 1] === "\n") i++;
        } else {
          this.pendingCR = true;
        }
      }
      start = i + 1;
      const message = this.processLine(line);
      if (message) out.push(message);
    }
    this.buffer = this.buffer.slice(start);
    return out;
  }

  /**
   * End of stream. Per the spec an event not terminated by a blank line is
   * discarded, so a connection cut mid-event never yields a partial event.
   */
  end(): SseMessage[] {
    this.buffer = "";
    this.resetEvent();
    return [];
  }

  private processLine(line: string): SseMessage | null {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) {
      const text = line.slice(1);
      return { type: "comment", text: text.startsWith(" ") ? text.slice(1) : text };
    }
    const colon = line.indexOf(":");
    let field: string;
    let value: string;
    if (colon === -1) {
      field = line;
      value = "";
    } else {
      field = line.slice(0, colon);
      value = line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
    }
    switch (field) {
      case "event":
        this.eventName = value;
        break;
      case "data":
        this.dataLines.push(value);
        this.hasData = true;
        break;
      case "id":
        if (!value.includes("\u0000")) this.lastEventId = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.retry = Number(value);
        break;
      default:
        // Unknown fields are ignored by the spec.
        break;
    }
    return null;
  }

  private dispatch(): SseEvent | null {
    if (!this.hasData) {
      this.resetEvent();
      return null;
    }
    const event: SseEvent = {
      type: "event",
      event: this.eventName || "message",
      data: this.dataLines.join("\n"),
      id: this.lastEventId,
    };
    if (this.retry !== undefined) event.retry = this.retry;
    this.resetEvent();
    return event;
  }

  private resetEvent(): void {
    this.dataLines = [];
    this.hasData = false;
    this.eventName = "";
    this.retry = undefined;
  }
}
