import { QueueFullError, type Capacity } from "./errors";

/** How often the queue asks the gateway whether a model slot is free. */
export const QUEUE_POLL_INTERVAL_MS = 5000;

export interface QueueOptions {
  /** GET /chat/capacity. */
  getCapacity: (signal?: AbortSignal) => Promise<Capacity>;
  /** The request was turned away: every slot is busy. */
  onQueued?: (capacity: Capacity) => void;
  /** A capacity poll answered (still queued unless `available > 0`). */
  onPoll?: (capacity: Capacity) => void;
  /** A slot looked free and the request is being retried. */
  onRetry?: () => void;
  signal?: AbortSignal;
  intervalMs?: number;
}

export class QueueAbortedError extends Error {
  constructor() {
    super("Left the queue");
    this.name = "QueueAbortedError";
  }
}

function wait(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new QueueAbortedError());
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(new QueueAbortedError());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Polls capacity every interval until a slot is free. Poll failures (gateway restarting) keep it waiting. */
export async function waitForCapacity(options: QueueOptions): Promise<Capacity> {
  const interval = options.intervalMs ?? QUEUE_POLL_INTERVAL_MS;
  for (;;) {
    await wait(interval, options.signal);
    let capacity: Capacity;
    try {
      capacity = await options.getCapacity(options.signal);
    } catch {
      if (options.signal?.aborted) throw new QueueAbortedError();
      continue;
    }
    options.onPoll?.(capacity);
    if (capacity.available > 0) return capacity;
  }
}

/**
 * Runs `send`; while it is rejected with a full gate (503), waits in the queue
 * and retries by itself when a slot frees. Other errors pass through.
 */
export async function sendWithQueue<T>(send: () => Promise<T>, options: QueueOptions): Promise<T> {
  for (;;) {
    try {
      return await send();
    } catch (err) {
      if (!(err instanceof QueueFullError)) throw err;
      options.onQueued?.(err.capacity);
    }
    await waitForCapacity(options);
    options.onRetry?.();
  }
}
