import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { HttpError, QueueFullError, type Capacity } from "./errors";
import { QueueAbortedError, sendWithQueue, waitForCapacity } from "./queue";

const FULL: Capacity = { active: 1, max: 1, available: 0 };
const FREE: Capacity = { active: 0, max: 1, available: 1 };

describe("queue mode", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("waits, polls every 5 s and retries by itself when a slot frees", async () => {
    const capacities = [FULL, FULL, FREE];
    const getCapacity = vi.fn(async () => capacities.shift()!);
    const send = vi
      .fn<() => Promise<string>>()
      .mockRejectedValueOnce(new QueueFullError(FULL, 5))
      .mockResolvedValueOnce("served");
    const onQueued = vi.fn();
    const onPoll = vi.fn();
    const onRetry = vi.fn();

    const result = sendWithQueue(send, { getCapacity, onQueued, onPoll, onRetry });
    await vi.advanceTimersByTimeAsync(0);
    expect(send).toHaveBeenCalledTimes(1);
    expect(onQueued).toHaveBeenCalledWith(FULL);
    expect(getCapacity).not.toHaveBeenCalled();

    await vi.advanceTimersByTimeAsync(4999);
    expect(getCapacity).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(getCapacity).toHaveBeenCalledTimes(1);
    expect(send).toHaveBeenCalledTimes(1);

    await vi.advanceTimersByTimeAsync(5000);
    expect(getCapacity).toHaveBeenCalledTimes(2);
    expect(send).toHaveBeenCalledTimes(1);

    await vi.advanceTimersByTimeAsync(5000);
    expect(getCapacity).toHaveBeenCalledTimes(3);
    expect(onRetry).toHaveBeenCalledTimes(1);
    await expect(result).resolves.toBe("served");
    expect(send).toHaveBeenCalledTimes(2);
    expect(onPoll.mock.calls.map((c) => c[0])).toEqual([FULL, FULL, FREE]);
  });

  it("queues again when the freed slot was taken by someone else", async () => {
    const getCapacity = vi.fn(async () => FREE);
    const send = vi
      .fn<() => Promise<string>>()
      .mockRejectedValueOnce(new QueueFullError(FULL, null))
      .mockRejectedValueOnce(new QueueFullError(FULL, null))
      .mockResolvedValueOnce("served");
    const onQueued = vi.fn();
    const result = sendWithQueue(send, { getCapacity, onQueued });
    await vi.advanceTimersByTimeAsync(10_000);
    await expect(result).resolves.toBe("served");
    expect(send).toHaveBeenCalledTimes(3);
    expect(onQueued).toHaveBeenCalledTimes(2);
  });

  it("keeps waiting through failed polls", async () => {
    const getCapacity = vi
      .fn<() => Promise<Capacity>>()
      .mockRejectedValueOnce(new Error("gateway restarting"))
      .mockResolvedValueOnce(FREE);
    const done = waitForCapacity({ getCapacity });
    await vi.advanceTimersByTimeAsync(10_000);
    await expect(done).resolves.toEqual(FREE);
    expect(getCapacity).toHaveBeenCalledTimes(2);
  });

  it("passes other errors through without queueing", async () => {
    const getCapacity = vi.fn(async () => FREE);
    const send = vi.fn(async () => {
      throw new HttpError(422, "message: field required");
    });
    await expect(sendWithQueue(send, { getCapacity })).rejects.toBeInstanceOf(HttpError);
    expect(getCapacity).not.toHaveBeenCalled();
  });

  it("stops waiting when the user leaves the queue", async () => {
    const abort = new AbortController();
    const getCapacity = vi.fn(async () => FULL);
    const send = vi.fn(async () => {
      throw new QueueFullError(FULL, null);
    });
    const result = sendWithQueue(send, { getCapacity, signal: abort.signal });
    const assertion = expect(result).rejects.toBeInstanceOf(QueueAbortedError);
    await vi.advanceTimersByTimeAsync(7000);
    abort.abort();
    await assertion;
    await vi.advanceTimersByTimeAsync(20_000);
    expect(getCapacity).toHaveBeenCalledTimes(1);
    expect(send).toHaveBeenCalledTimes(1);
  });
});
