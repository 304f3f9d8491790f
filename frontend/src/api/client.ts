import { GatewayUnreachableError, errorFromResponse, parseCapacity, type Capacity } from "./errors";

/** Same-origin API root; the ingress routes /api to the chat gateway. */
export const API_BASE = "/api/v1";

export type FetchFn = (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>;

export interface SessionSummary {
  id: string;
  title: string | null;
  created_at: string;
  updated_at: string;
  message_count: number;
}

export interface HistoryToolCall {
  id?: string;
  name?: string;
  arguments?: unknown;
  function?: { name?: string; arguments?: unknown };
  /** How the call ended (absent in history stored before the gateway kept it). */
  status?: "ok" | "rejected" | "failed";
  /** Why a rejected or failed call did not run. */
  error?: string;
  /** The orchestrator's ToolError kind ("rejected", "approval_timeout", "tool_failed", …). */
  error_kind?: string;
}

export interface HistoryMessage {
  role: string;
  content: string;
  tool_calls?: HistoryToolCall[] | null;
  created_at?: string | null;
  /** The answer's number check (proto3 JSON `Grounding`), where the history keeps it. */
  grounding?: unknown;
}

export interface SessionHistory {
  session_id: string;
  title: string | null;
  messages: HistoryMessage[];
}

/** A place the search box offers (GET /places/search). */
export interface PlaceCandidate {
  name: string;
  kind: string;
  country?: string;
  ref: string;
  /** [lon, lat] of a point place. */
  point?: [number, number];
  /** [west, south, east, north] of an area. */
  bbox?: [number, number, number, number];
  population?: number;
}

export interface PlaceResults {
  query: string;
  results: PlaceCandidate[];
}

/** A city name the map draws (GET /places/labels). */
export interface PlaceLabel {
  name: string;
  lon: number;
  lat: number;
  population: number;
  country?: string;
  ref?: string;
}

export interface PlaceLabels {
  bbox: [number, number, number, number];
  /** The most populous cities in the box, largest first. */
  labels: PlaceLabel[];
}

/** One place dataset's load (GET /places/status): counts on a loading or stalled one, features on a loaded one. */
export interface PlaceDatasetStatus {
  id: string;
  state: "loaded" | "loading" | "stalled";
  stage?: "embedding" | "writing";
  done?: number;
  total?: number;
  features?: number;
}

/** How far the loading of the place names has come; until it ends, search and city names find only what is loaded. */
export interface PlaceStatus {
  /** Some dataset is still loading (a stalled one does not count). */
  loading: boolean;
  datasets: PlaceDatasetStatus[];
}

/** A conversation's map as the gateway keeps it (PUT/GET /chat/session/{id}/map-state). */
export interface SavedMapLayer {
  id: string;
  source: { type: "raster"; tiles: string[]; tileSize?: number; bounds?: [number, number, number, number]; minzoom?: number; maxzoom?: number; attribution?: string };
  legend: Record<string, unknown> | null;
  origin: "agent" | "user";
  visible: boolean;
  opacity: number;
}

export interface SavedMapState {
  view: { center: { lat: number; lon: number }; zoom: number; bearing: number; pitch?: number };
  basemap: string;
  basemap_visible: boolean;
  basemap_opacity: number;
  layers: SavedMapLayer[];
  selected_feature: Record<string, unknown> | null;
  drawn_geometry: Record<string, unknown> | null;
}

export interface ServiceInfo {
  model: string;
  provider: string;
  auth_mode: string;
}

/** GET /models: what the orchestrator's provider offers. */
export interface ModelList {
  default: string;
  models: string[];
}

const defaultFetch: FetchFn = (input, init) => globalThis.fetch(input, init);

/** Thin typed wrapper over the gateway's JSON endpoints. */
export class ApiClient {
  constructor(private readonly fetchFn: FetchFn = defaultFetch) {}

  /** Raw request with the auth cookie; network failures become GatewayUnreachableError. */
  async request(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (init.body !== undefined && !headers.has("Content-Type")) headers.set("Content-Type", "application/json");
    try {
      return await this.fetchFn(`${API_BASE}${path}`, { credentials: "same-origin", ...init, headers });
    } catch (err) {
      if ((err as Error).name === "AbortError") throw err;
      throw new GatewayUnreachableError();
    }
  }

  private async json<T>(path: string, init: RequestInit = {}): Promise<T> {
    const resp = await this.request(path, init);
    if (!resp.ok) throw await errorFromResponse(resp);
    if (resp.status === 204) return undefined as T;
    const text = await resp.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  info(): Promise<ServiceInfo> {
    return this.json<ServiceInfo>("/info");
  }

  /** The models a message may name (`model`), the default first. */
  models(): Promise<ModelList> {
    return this.json<ModelList>("/models");
  }

  async capacity(signal?: AbortSignal): Promise<Capacity> {
    return parseCapacity(await this.json<unknown>("/chat/capacity", { signal }));
  }

  listSessions(): Promise<SessionSummary[]> {
    return this.json<SessionSummary[]>("/chat/sessions");
  }

  history(sessionId: string): Promise<SessionHistory> {
    return this.json<SessionHistory>(`/chat/session/${encodeURIComponent(sessionId)}/history`);
  }

  renameSession(sessionId: string, title: string): Promise<unknown> {
    return this.json(`/chat/session/${encodeURIComponent(sessionId)}`, {
      method: "PATCH",
      body: JSON.stringify({ title }),
    });
  }

  deleteSession(sessionId: string): Promise<unknown> {
    return this.json(`/chat/session/${encodeURIComponent(sessionId)}`, { method: "DELETE" });
  }

  searchPlaces(query: string, limit: number, signal?: AbortSignal): Promise<PlaceResults> {
    const params = new URLSearchParams({ q: query, limit: String(limit) });
    return this.json<PlaceResults>(`/places/search?${params}`, { signal });
  }

  /** City names for a map view: `bbox` is [west, south, east, north], west > east across the antimeridian. */
  placeLabels(bbox: [number, number, number, number], limit: number, signal?: AbortSignal): Promise<PlaceLabels> {
    const params = new URLSearchParams({ bbox: bbox.join(","), limit: String(limit) });
    return this.json<PlaceLabels>(`/places/labels?${params}`, { signal });
  }

  /** How far the loading of the place names has come. */
  placeStatus(signal?: AbortSignal): Promise<PlaceStatus> {
    return this.json<PlaceStatus>("/places/status", { signal });
  }

  async mapState(sessionId: string): Promise<SavedMapState | null> {
    const saved = await this.json<{ map_state: SavedMapState | null }>(`/chat/session/${encodeURIComponent(sessionId)}/map-state`);
    return saved?.map_state ?? null;
  }

  saveMapState(sessionId: string, state: SavedMapState): Promise<unknown> {
    return this.json(`/chat/session/${encodeURIComponent(sessionId)}/map-state`, { method: "PUT", body: JSON.stringify(state) });
  }

  cancelRun(runId: string): Promise<unknown> {
    return this.json(`/chat/runs/${encodeURIComponent(runId)}/cancel`, { method: "POST" });
  }

  answerApproval(approvalId: string, approved: boolean, reason: string | null): Promise<unknown> {
    return this.json(`/chat/approvals/${encodeURIComponent(approvalId)}`, {
      method: "POST",
      body: JSON.stringify({ approved, reason }),
    });
  }
}
