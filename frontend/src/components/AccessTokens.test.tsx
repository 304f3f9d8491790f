import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { AccessTokens } from "./AccessTokens";

describe("AccessTokens", () => {
  it("offers every MCP server and starts closed, with creation disabled until named", () => {
    const out = renderToStaticMarkup(<AccessTokens />);
    expect(out).toMatch(/^<details class="access-tokens"><summary>MCP access tokens<\/summary>/);
    for (const server of ["raster", "vector", "knowledge", "memory"]) expect(out).toContain(`${server}</label>`);
    expect(out).toMatch(/<button type="submit" class="small primary" disabled="">Create token<\/button>/);
  });
});
