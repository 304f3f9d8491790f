import { describe, expect, it } from "vitest";
import { SseParser, type SseMessage } from "./sse";

function feedAll(chunks: string[]): SseMessage[] {
  const parser = new SseParser();
  return chunks.flatMap((c) => parser.feed(c));
}

const STREAM =
  ": ping\n\n" +
  'id: 1-0\nevent: session\ndata: {"runId":"r1"}\n\n' +
  'id: 2-0\nevent: content\ndata: {"content":{"text":"Hello"}}\n\n';

describe("SseParser", () => {
  it("parses named events with ids and data", () => {
    const out = feedAll([STREAM]).filter((m) => m.type === "event");
    expect(out).toEqual([
      { type: "event", event: "session", data: '{"runId":"r1"}', id: "1-0" },
      { type: "event", event: "content", data: '{"content":{"text":"Hello"}}', id: "2-0" },
    ]);
  });

  it("gives the same events however the bytes are split", () => {
    const whole = feedAll([STREAM]);
    for (let size = 1; size <= 7; size++) {
      const chunks: string[] = [];
      for (let i = 0; i < STREAM.length; i += size) chunks.push(STREAM.slice(i, i + size));
      expect(feedAll(chunks)).toEqual(whole);
    }
  });

  it("reports comment lines such as heartbeats without making events", () => {
    const out = feedAll([": ping\n\n", ":no-space\n"]);
    expect(out).toEqual([
      { type: "comment", text: "ping" },
      { type: "comment", text: "no-space" },
    ]);
  });

  it("joins multi-line data with newlines", () => {
    const [event] = feedAll(["data: line one\ndata: line two\ndata\n\n"]);
    expect(event).toMatchObject({ type: "event", event: "message", data: "line one\nline two\n" });
  });

  it("accepts CRLF and lone CR line endings, even with CR and LF in different chunks", () => {
    const out = feedAll(["event: a\r", "\ndata: x\r", "\r", "event: b\rdata: y\r\r"]);
    expect(out).toEqual([
      { type: "event", event: "a", data: "x", id: null },
      { type: "event", event: "b", data: "y", id: null },
    ]);
  });

  it("keeps the last id for later events and ignores ids with NUL", () => {
    const out = feedAll(["id: 7\ndata: a\n\n", "data: b\n\n", "id: bad\u0000\ndata: c\n\n"]);
    expect(out.map((m) => (m.type === "event" ? m.id : null))).toEqual(["7", "7", "7"]);
  });

  it("dispatches nothing for an event without data and resets its name", () => {
    const out = feedAll(["event: orphan\n\n", "data: x\n\n"]);
    expect(out).toEqual([{ type: "event", event: "message", data: "x", id: null }]);
  });

  it("removes only one leading space of a value and ignores unknown fields", () => {
    const [event] = feedAll(["foo: bar\ndata:  two spaces\n\n"]);
    expect(event).toMatchObject({ data: " two spaces" });
  });

  it("never yields an event cut off by the end of the stream", () => {
    const parser = new SseParser();
    expect(parser.feed('id: 3\nevent: content\ndata: {"content"')).toEqual([]);
    expect(parser.end()).toEqual([]);
    expect(parser.lastId).toBe("3");
  });

  it("strips a byte order mark at the start", () => {
    const [event] = feedAll(["\uFEFFdata: x\n\n"]);
    expect(event).toMatchObject({ data: "x" });
  });

  it("reads retry values", () => {
    const [event] = feedAll(["retry: 2500\ndata: x\n\n"]);
    expect(event).toMatchObject({ retry: 2500 });
  });

  it("starts from a given last id when resuming", () => {
    const parser = new SseParser("41-0");
    expect(parser.feed("data: x\n\n")).toEqual([{ type: "event", event: "message", data: "x", id: "41-0" }]);
  });
});
