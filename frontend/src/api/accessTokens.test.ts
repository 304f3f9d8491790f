import { describe, expect, it } from "vitest";
import { ApiClient, type FetchFn } from "./client";
import { createAccessToken, listAccessTokens, mcpUrl, revokeAccessToken } from "./accessTokens";
import { HttpError } from "./errors";

function fake(status: number, body: unknown, seen: { url?: string; init?: RequestInit }[]): FetchFn {
  return async (input, init) => {
    seen.push({ url: String(input), init });
    const text = body === undefined ? null : JSON.stringify(body);
    return new Response(text, { status, headers: { "Content-Type": "application/json" } });
  };
}

const TOKEN = {
  id: "7f0c5c8e-0000-4000-8000-000000000000",
  name: "my IDE",
  servers: ["memory"],
  created_at: "2026-12-03T08:00:00Z",
  expires_at: "2027-01-02T08:00:00Z",
  last_used_at: null,
  expired: false,
};

describe("access tokens API", () => {
  it("creates a token with the chosen servers and returns it once", async () => {
    const seen: { url?: string; init?: RequestInit }[] = [];
    const api = new ApiClient(fake(201, { ...TOKEN, token: "sgpat_x" }, seen));
    const created = await createAccessToken(api, { name: "my IDE", servers: ["memory"], expires_in_days: 30 });
    expect(created.token).toBe("sgpat_x");
    expect(seen[0].url).toBe("/api/v1/tokens");
    expect(seen[0].init?.method).toBe("POST");
    expect(JSON.parse(String(seen[0].init?.body))).toEqual({ name: "my IDE", servers: ["memory"], expires_in_days: 30 });
  });

  it("turns a 422 into an error naming the field", async () => {
    const body = { field: "servers.0", message: "servers.0: unknown MCP server; one of: memory", code: "invalid_argument" };
    const api = new ApiClient(fake(422, body, []));
    const error = await createAccessToken(api, { name: "x", servers: ["weather"], expires_in_days: 1 }).catch((e) => e);
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).field).toBe("servers.0");
    expect((error as HttpError).reason).toBe("servers.0: unknown MCP server; one of: memory");
  });

  it("lists and revokes (a token already gone counts as revoked)", async () => {
    const seen: { url?: string; init?: RequestInit }[] = [];
    expect(await listAccessTokens(new ApiClient(fake(200, [TOKEN], seen)))).toEqual([TOKEN]);
    await revokeAccessToken(new ApiClient(fake(204, undefined, seen)), TOKEN.id);
    await revokeAccessToken(new ApiClient(fake(404, { field: null, message: "token not found", code: "not_found" }, seen)), TOKEN.id);
    expect(seen.map((s) => [s.init?.method ?? "GET", s.url])).toEqual([
      ["GET", "/api/v1/tokens"],
      ["DELETE", `/api/v1/tokens/${TOKEN.id}`],
      ["DELETE", `/api/v1/tokens/${TOKEN.id}`],
    ]);
    const down = { field: null, message: "Postgres is unavailable; retry shortly", code: "unavailable" };
    await expect(revokeAccessToken(new ApiClient(fake(503, down, [])), "x")).rejects.toThrow(
      "HTTP 503: Postgres is unavailable; retry shortly",
    );
  });

  it("builds the MCP endpoint of a server", () => {
    expect(mcpUrl("https://stacgis.example.com/", "memory")).toBe("https://stacgis.example.com/mcp/memory");
  });
});
