import { ApiClient } from "./client";
import { errorFromResponse } from "./errors";

/** The MCP tool servers the gateway exposes to outside clients at /mcp/<server>. */
export const MCP_SERVERS = ["raster", "vector", "knowledge", "memory"] as const;

export interface AccessToken {
  id: string;
  name: string;
  servers: string[];
  created_at: string;
  expires_at: string;
  last_used_at: string | null;
  expired: boolean;
}

/** The creation answer: the only time the token itself is shown. */
export interface CreatedAccessToken extends AccessToken {
  token: string;
}

export interface NewAccessToken {
  name: string;
  servers: string[];
  expires_in_days: number;
}

async function json<T>(resp: Response): Promise<T> {
  if (!resp.ok) throw await errorFromResponse(resp);
  return (await resp.json()) as T;
}

export async function listAccessTokens(api: ApiClient): Promise<AccessToken[]> {
  return json<AccessToken[]>(await api.request("/tokens"));
}

export async function createAccessToken(api: ApiClient, body: NewAccessToken): Promise<CreatedAccessToken> {
  return json<CreatedAccessToken>(await api.request("/tokens", { method: "POST", body: JSON.stringify(body) }));
}

export async function revokeAccessToken(api: ApiClient, id: string): Promise<void> {
  const resp = await api.request(`/tokens/${encodeURIComponent(id)}`, { method: "DELETE" });
  // Already revoked elsewhere: the token is gone either way.
  if (!resp.ok && resp.status !== 404) throw await errorFromResponse(resp);
}

/** Where an MCP client connects for `server` (streamable HTTP, bearer token). */
export function mcpUrl(origin: string, server: string): string {
  return `${origin.replace(/\/+$/, "")}/mcp/${server}`;
}
