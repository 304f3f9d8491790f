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

/**
 * Any other non-2xx answer. `reason` is the gateway's `message` (naming the field at fault when there
 * is one, e.g. "spatial_context.zoom: Input should be ..."), `field` that field's dotted path, `code` a
 * stable code (`invalid_argument`, `not_found`, ...).
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    readonly field: string | null = null,
    readonly code: string | null = null,
  ) {
    super(`HTTP ${status}: ${reason}`);
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

/**
 * The gateway's one error body: `{field, message, code}` (stacgis_common.http_errors), plus what a
 * refusal adds (a 409's `run_id`, a full gate's `active`/`max`/`available`).
 */
export interface ErrorBody {
  field: string | null;
  message: string;
  code: string | null;
}

export function readErrorBody(body: unknown): ErrorBody | null {
  const rec = (body ?? {}) as Record<string, unknown>;
  if (typeof rec.message !== "string" || !rec.message) return null;
  return {
    field: typeof rec.field === "string" ? rec.field : null,
    message: rec.message,
    code: typeof rec.code === "string" ? rec.code : null,
  };
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
  const error = readErrorBody(body);
  const reason = error?.message || resp.statusText || `status ${resp.status}`;
  if (resp.status === 503 && "available" in rec) {
    const header = resp.headers.get("Retry-After");
    const retryAfter = header !== null && /^\d+$/.test(header) ? Number(header) : null;
    return new QueueFullError(parseCapacity(rec), retryAfter);
  }
  if (resp.status === 409) {
    return new ActiveRunError(reason, typeof rec.run_id === "string" ? rec.run_id : null);
  }
  if (resp.status === 502 || resp.status === 504 || (resp.status === 503 && body === null)) {
    return new GatewayUnreachableError(`The chat service is not answering (HTTP ${resp.status})`);
  }
  return new HttpError(resp.status, reason, error?.field ?? null, error?.code ?? null);
}
