import { expect, test } from "@playwright/test";
import {
  addRules,
  lastAnswer,
  mapCenter,
  openApp,
  resetRules,
  screenshot,
  send,
  toolThenAnswer,
  uniqueToken,
  waitForAnswer,
} from "./support";

test.afterAll(async ({ request }) => {
  await resetRules(request);
});

test("zoom_to_location moves the map", async ({ page, request }) => {
  const token = uniqueToken("zoom");
  await addRules(
    request,
    toolThenAnswer(token, { name: "zoom_to_location", arguments: { lat: 48.8566, lon: 2.3522, zoom: 9 } }, "Here is Paris."),
  );
  await openApp(page);
  const before = await mapCenter(page);
  expect(Math.abs(before.lng - 2.3522)).toBeGreaterThan(1);

  await send(page, `Show me Paris ${token}`);
  await waitForAnswer(page);
  await expect
    .poll(async () => {
      const c = await mapCenter(page);
      return [Number(c.lat.toFixed(2)), Number(c.lng.toFixed(2)), Math.round(c.zoom)];
    })
    .toEqual([48.86, 2.35, 9]);
  await expect(lastAnswer(page).locator("li.activity-frontend[data-tool=zoom_to_location]")).toBeAttached();
  await screenshot(page, "map-zoomed");
});

test("visualize_collection adds a raster layer whose tiles load, with a legend", async ({ page, request }) => {
  const token = uniqueToken("viz");
  await addRules(
    request,
    toolThenAnswer(
      token,
      { name: "visualize_collection", arguments: { collection_id: "luxembourg-dem" } },
      "The Luxembourg elevation model is on the map.",
    ),
  );
  await openApp(page);
  const tiles: number[] = [];
  page.on("response", (resp) => {
    if (/\/tiles\/luxembourg-dem\/\d+\/\d+\/\d+\.png/.test(resp.url())) tiles.push(resp.status());
  });

  await send(page, `Show the Luxembourg elevation model ${token}`);
  await waitForAnswer(page);
  await page.waitForFunction(() => Boolean(window.__stacgisMap?.getLayer("raster:luxembourg-dem")));
  await expect.poll(() => tiles.filter((s) => s === 200).length, { timeout: 30_000 }).toBeGreaterThan(0);
  expect(tiles.every((s) => s === 200), `tile statuses: ${tiles.join(",")}`).toBe(true);
  await page.waitForFunction(() => window.__stacgisMap!.isSourceLoaded("raster:luxembourg-dem"));

  // The map moved to the data.
  const c = await mapCenter(page);
  expect(c.lng).toBeGreaterThan(5.7);
  expect(c.lng).toBeLessThan(6.6);
  expect(c.lat).toBeGreaterThan(49.4);
  expect(c.lat).toBeLessThan(50.2);

  const legend = page.getByRole("region", { name: "Map legend" });
  await expect(legend.locator("[data-collection=luxembourg-dem]")).toBeVisible();
  await page.waitForTimeout(500);
  await screenshot(page, "map-raster-layer");
});

test("a scene collection shows as a mosaic through the agent's expression, with a legend", async ({ page, request }) => {
  const token = uniqueToken("scenes");
  // Centred on Olinda close enough for the layer's minzoom (few scenes per tile).
  const call = {
    name: "visualize_collection",
    arguments: { collection_id: "landsat7-olinda-scenes", expression: "ndwi", lat: -8.0, lon: -34.88, zoom: 14 },
  };
  await addRules(request, toolThenAnswer(token, call, "The water index of the Landsat scenes is on the map."));
  await openApp(page);
  const tiles: { url: string; status: number; type: string | null }[] = [];
  page.on("response", (resp) => {
    if (/\/tiles\/landsat7-olinda-scenes\/\d+\/\d+\/\d+\.png/.test(resp.url())) {
      tiles.push({ url: resp.url(), status: resp.status(), type: resp.headers()["content-type"] ?? null });
    }
  });

  await send(page, `Show the water index of the Olinda scenes ${token}`);
  await waitForAnswer(page);
  await page.waitForFunction(() => Boolean(window.__stacgisMap?.getLayer("raster:landsat7-olinda-scenes")));
  await expect.poll(() => tiles.filter((t) => t.status === 200).length, { timeout: 45_000 }).toBeGreaterThan(0);
  // Every tile is a PNG of the mosaic through the expression the agent chose, not the default NDVI.
  expect(tiles.every((t) => t.status === 200 && t.type === "image/png"), JSON.stringify(tiles)).toBe(true);
  expect(tiles.every((t) => new URL(t.url).searchParams.get("expression") === "ndwi")).toBe(true);
  await page.waitForFunction(() => window.__stacgisMap!.isSourceLoaded("raster:landsat7-olinda-scenes"));
  const legend = page.getByRole("region", { name: "Map legend" });
  await expect(legend.locator("[data-collection=landsat7-olinda-scenes]")).toBeVisible();
  await page.waitForTimeout(500);
  await screenshot(page, "map-scene-mosaic");
});

test("generate_chart draws a chart in the conversation", async ({ page, request }) => {
  const token = uniqueToken("chart");
  // The model describes the chart; the orchestrator turns it into a Chart.js config.
  const chart = {
    chart_type: "bar",
    title: "Monthly precipitation",
    labels: ["Jan", "Feb", "Mar", "Apr"],
    datasets: [{ label: "Precipitation (mm)", data: [62, 48, 55, 51] }],
  };
  await addRules(request, toolThenAnswer(token, { name: "generate_chart", arguments: chart }, "Here is the chart."));
  await openApp(page);
  await send(page, `Chart the monthly precipitation ${token}`);
  const answer = await waitForAnswer(page);
  const figure = answer.locator("figure.chart");
  await expect(figure).toHaveAttribute("data-chart-ready", "true");
  await expect(figure).toHaveAttribute("data-chart-type", "bar");
  await expect(figure.getByRole("img", { name: "Chart: Monthly precipitation" })).toBeVisible();
  await expect(page.locator("[data-notice=error]")).toHaveCount(0);

  // Something was drawn: the canvas holds more than one colour.
  const colours = await figure.locator("canvas").evaluate((canvas: HTMLCanvasElement) => {
    const ctx = canvas.getContext("2d")!;
    const { data } = ctx.getImageData(0, 0, canvas.width, canvas.height);
    const seen = new Set<string>();
    for (let i = 0; i < data.length; i += 4 * 97) seen.add(`${data[i]},${data[i + 1]},${data[i + 2]},${data[i + 3]}`);
    return seen.size;
  });
  expect(colours).toBeGreaterThan(3);
  await screenshot(page, "chat-chart");

  // The chart comes back with the conversation after a reload.
  await page.reload();
  await openApp(page);
  await expect(lastAnswer(page).locator("figure.chart")).toHaveAttribute("data-chart-ready", "true");
});

test("the map centre, a clicked country and a drawn area go with the message", async ({ page, request }) => {
  const token = uniqueToken("context");
  await addRules(request, [{ name: token, match: { last_user: token }, content: "Got the context.", delay_ms: 1 }]);
  await openApp(page);
  await page.evaluate(() => window.__stacgisMap!.jumpTo({ center: [2.35, 46.6], zoom: 5 }));
  await page.waitForFunction(() => !window.__stacgisMap!.isMoving());

  // Click France (the centre of the map) to select it.
  const box = (await page.getByTestId("map").boundingBox())!;
  await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
  await expect(page.getByTestId("context-feature")).toContainText("France");

  // Draw a triangle with the drawing tool.
  await page.getByRole("button", { name: "Draw area" }).click();
  const at = (dx: number, dy: number) => page.mouse.click(box.x + box.width / 2 + dx, box.y + box.height / 2 + dy);
  await at(-60, -40);
  await at(60, -40);
  await at(0, 50);
  await page.getByRole("button", { name: "Finish area" }).click();
  await expect(page.getByTestId("context-area")).toContainText("3 corners");
  await screenshot(page, "map-context");

  const requestBody = page.waitForRequest((r) => r.url().endsWith("/api/v1/chat/stream") && r.method() === "POST");
  await send(page, `What is here? ${token}`);
  const body = (await requestBody).postDataJSON() as {
    spatial_context: {
      map_center: { lat: number; lon: number };
      zoom: number;
      selected_feature: { type: string; properties: { name: string }; geometry: { type: string } };
      drawn_geometry: { type: string; coordinates: number[][][] };
    };
  };
  const ctx = body.spatial_context;
  expect(ctx.map_center.lat).toBeCloseTo(46.6, 1);
  expect(ctx.map_center.lon).toBeCloseTo(2.35, 1);
  expect(ctx.zoom).toBeCloseTo(5, 1);
  expect(ctx.selected_feature.type).toBe("Feature");
  expect(ctx.selected_feature.properties.name).toBe("France");
  expect(ctx.selected_feature.geometry.type).toMatch(/Polygon/);
  expect(ctx.drawn_geometry.type).toBe("Polygon");
  expect(ctx.drawn_geometry.coordinates[0]).toHaveLength(4);
  expect(ctx.drawn_geometry.coordinates[0][0]).toEqual(ctx.drawn_geometry.coordinates[0][3]);
  await waitForAnswer(page);
});

test("set_map_style switches the basemap and keeps added layers", async ({ page, request }) => {
  const token = uniqueToken("style");
  await addRules(request, [
    {
      name: `${token}-call`,
      match: { last_user: token, step: 0 },
      tool_calls: [
        { name: "visualize_collection", arguments: { collection_id: "global-precipitation-2016" } },
        { name: "set_map_style", arguments: { style: "dark" } },
      ],
    },
    { name: `${token}-answer`, match: { last_user: token, step: 1 }, content: "Switched to the dark map.", delay_ms: 1 },
  ]);
  await openApp(page);
  await send(page, `Dark map with rain please ${token}`);
  await waitForAnswer(page);
  await expect
    .poll(() => page.evaluate(() => window.__stacgisMap!.getStyle()?.name))
    .toBe("stacgis-offline-dark");
  await expect
    .poll(() => page.evaluate(() => Boolean(window.__stacgisMap!.getLayer("raster:global-precipitation-2016"))))
    .toBe(true);
  await expect(page.getByRole("combobox", { name: "Basemap" })).toHaveValue("dark");
  await screenshot(page, "map-dark");
});
