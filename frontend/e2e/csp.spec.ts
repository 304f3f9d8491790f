import { expect, test } from "@playwright/test";
import { addRules, cspViolations, openApp, resetRules, send, uniqueToken, waitForAnswer } from "./support";

test.afterAll(async ({ request }) => {
  await resetRules(request);
});

test("the app sends a strict Content-Security-Policy and runs within it", async ({ page, request }) => {
  const response = await page.request.get("/");
  const policy = response.headers()["content-security-policy"] ?? "";
  // Scripts only from the app's origin: an injected <script> or inline handler does not run.
  expect(policy).toContain("script-src 'self'");
  expect(policy).not.toContain("unsafe-inline");
  expect(policy).not.toContain("unsafe-eval");
  expect(policy).toContain("frame-ancestors 'none'");
  expect(policy).toContain("object-src 'none'");

  // Everything a session does: the map with its workers, a raster layer's tiles and legend, a chart,
  // another basemap, the answer streamed over SSE.
  const token = uniqueToken("csp");
  const chart = { chart_type: "line", title: "Rain", labels: ["Jan", "Feb", "Mar"], datasets: [{ label: "mm", data: [3, 5, 4] }] };
  await addRules(request, [
    {
      name: `${token}-call`,
      match: { last_user: token, step: 0 },
      tool_calls: [
        { name: "visualize_collection", arguments: { collection_id: "luxembourg-dem" } },
        { name: "generate_chart", arguments: chart },
        { name: "set_map_style", arguments: { style: "satellite" } },
      ],
    },
    { name: `${token}-answer`, match: { last_user: token, step: 1 }, content: "Done: layer, chart and basemap.", delay_ms: 1 },
  ]);
  const tiles: number[] = [];
  page.on("response", (resp) => {
    if (/\/tiles\/luxembourg-dem\/\d+\/\d+\/\d+\.png/.test(resp.url())) tiles.push(resp.status());
  });
  await openApp(page);
  await send(page, `Layer, chart and satellite map ${token}`);
  const answer = await waitForAnswer(page);
  await expect(answer.locator("figure.chart")).toHaveAttribute("data-chart-ready", "true");
  await page.waitForFunction(() => Boolean(window.__stacgisMap?.getLayer("raster:luxembourg-dem")));
  await expect.poll(() => tiles.filter((s) => s === 200).length, { timeout: 30_000 }).toBeGreaterThan(0);
  await page.waitForFunction(() => window.__stacgisMap!.areTilesLoaded());

  expect(await cspViolations(page)).toEqual([]);

  // The policy is enforced: an injected inline script is refused and reported.
  await page.evaluate(() => {
    const script = document.createElement("script");
    script.textContent = "window.__injected = true;";
    document.body.appendChild(script);
  });
  await expect.poll(() => cspViolations(page)).toContainEqual(expect.stringContaining("script-src"));
  expect(await page.evaluate(() => (window as unknown as { __injected?: boolean }).__injected)).toBeUndefined();
});
