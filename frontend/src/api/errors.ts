/** Errors the gateway API can answer with, as the UI needs to tell them apart. */

export interface Capacity {
  active: number;
  max: number;
  available: number;
}

/** 503 from the concurrency gate: every model slot is busy. */
export class QueueFullError extends Error {
  constructor(
    readonly capacity: Capacity,
    readonly retryAfterSeconds: number | null,
  ) {
    super("All model slots are busy");
    this.name = "QueueFullError";
  }
}

/** 409: this conversation already has a run in progress. */
export class ActiveRunError extends Error {
  constructor(
    message: string,
    readonly runId: string | null,
  ) {
    super(message);
    this.name = "ActiveRunError";
  }
}

/** No HTTP answer at all, or the ingress could not reach the gateway (502/504). */
export class GatewayUnreachableError extends Error {
  constructor(message = "The chat service cannot be reached") {
    super(message);
    this.name = "GatewayUnreachableError";
  }
}

/** Any other non-2xx answer; `detail` is the gateway's explanation. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(`HTTP ${status}: ${detail}`);
    this.name = "HttpError";
  }
}

/** The stream ended and could not be resumed. */
export class StreamLostError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StreamLostError";
  }
}

function describeDetail(detail: unknown): string {
  if (typeof detail === "string") return detail;
  if (Array.isArray(detail)) {
    // FastAPI validation errors: [{loc: [...], msg: "..."}]
    return detail
      .map((item) => {
        if (item && typeof item === "object") {
          const rec = item as { loc?: unknown[]; msg?: unknown };
          const loc = Array.isArray(rec.loc) ? rec.loc.filter((p) => p !== "body").join(".") : "";
          const msg = typeof rec.msg === "string" ? rec.msg : JSON.stringify(item);
          return loc ? `${loc}: ${msg}` : msg;
        }
        return String(item);
      })
      .join("; ");
  }
  if (detail === undefined || detail === null) return "";
  return JSON.stringify(detail);
}

function toNumber(value: unknown, fallback = 0): number {
  const n = typeof value === "number" ? value : Number(value);
  return Number.isFinite(n) ? n : fallback;
}

export function parseCapacity(body: unknown): Capacity {
  const rec = (body ?? {}) as Record<string, unknown>;
  return { active: toNumber(rec.active), max: toNumber(rec.max), available: toNumber(rec.available) };
}

/** Turns a non-OK response into the matching error. */
export async function errorFromResponse(resp: Response): Promise<Error> {
  let body: unknown;
  try {
    body = await resp.json();
  } catch {
    body = null;
  }
  const rec = (body ?? {}) as Record<string, unknown>;
  const detail = describeDetail(rec.detail) || resp.statusText || `status ${resp.status}`;
  if (resp.status === 503 && "available" in rec) {
    const header = resp.headers.get("Retry-After");
    const retryAfter = header !== null && /^\d+$/.test(header) ? Number(header) : null;
    return new QueueFullError(parseCapacity(rec), retryAfter);
  }
  if (resp.status === 409) {
    return new ActiveRunError(detail, typeof rec.run_id === "string" ? rec.run_id : null);
  }
  if (resp.status === 502 || resp.status === 504 || (resp.status === 503 && body === null)) {
    return new GatewayUnreachableError(`The chat service is not answering (HTTP ${resp.status})`);
  }
  return new HttpError(resp.status, detail);
}
