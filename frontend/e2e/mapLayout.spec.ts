import { expect, test, type Page } from "@playwright/test";
import { DESKTOP, PHONE, ask, lastAnswer, openApp, serveWithFakeGateway, shot } from "./fakeStack";

/**
 * What the map shows beside (or under) the chat: the intended first view and the
 * agent's layers in the part of the map that is not covered, and basemaps named
 * for what they are. Served with Vite against the stand-in gateway.
 */

const stack = serveWithFakeGateway();
const { gateway } = stack;

/** The app's first view (src/state/uiStore.ts). */
const START = { lng: 6.13, lat: 49.61 };
/** The colour the map draws at a page pixel, [r, g, b], read from its WebGL buffer right after a frame. */
async function colourAt(page: Page, x: number, y: number): Promise<number[]> {
  return page.evaluate(
    ([x, y]) =>
      new Promise<number[]>((resolve) => {
        const map = window.__stacgisMap!;
        map.once("render", () => {
          const canvas = map.getCanvas();
          const gl = (canvas.getContext("webgl2") ?? canvas.getContext("webgl"))!;
          const box = canvas.getBoundingClientRect();
          const ratio = canvas.width / box.width;
          const px = new Uint8Array(4);
          gl.readPixels(Math.round((x - box.left) * ratio), Math.round(canvas.height - (y - box.top) * ratio), 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, px);
          resolve([px[0], px[1], px[2]]);
        });
        map.triggerRepaint();
      }),
    [x, y],
  );
}

/** The Luxembourg DEM's extent, as its TileJSON gives it. */
const DEM_BOUNDS: [number, number, number, number] = [5.73, 49.45, 6.53, 50.18];

interface Seen {
  /** Where the place is drawn, in page pixels. */
  x: number;
  y: number;
  /** Whether that pixel shows the map (not a panel over it). */
  onMap: boolean;
  /** Top of the chat panel in page pixels, or null when it is hidden. */
  sheetTop: number | null;
}

async function whereIs(page: Page, lng: number, lat: number): Promise<Seen> {
  await page.waitForFunction(() => !window.__stacgisMap!.isMoving());
  return page.evaluate(
    ([lng, lat]) => {
      const map = window.__stacgisMap!;
      const box = map.getContainer().getBoundingClientRect();
      const p = map.project([lng, lat]);
      const x = box.left + p.x;
      const y = box.top + p.y;
      const hit = document.elementFromPoint(x, y);
      const sheet = document.getElementById("chat-panel");
      return {
        x,
        y,
        onMap: hit === map.getCanvas(),
        sheetTop: sheet && !sheet.hidden ? sheet.getBoundingClientRect().top : null,
      };
    },
    [lng, lat],
  );
}

test("on a phone the first view shows the intended area above the chat sheet, and again without it", async ({ page }) => {
  await page.setViewportSize(PHONE);
  await openApp(page, stack.url());
  const seen = await whereIs(page, START.lng, START.lat);
  expect(seen.sheetTop, "the chat sheet is open on first load").not.toBeNull();
  expect(seen.y, "the intended centre is above the sheet").toBeLessThan(seen.sheetTop!);
  expect(seen.onMap, "the intended centre is not covered").toBe(true);
  // The map's context (sent with every message) is the visible centre.
  await expect(page.getByTestId("context-center")).toHaveText(/Map 49\.61, 6\.13/);
  await shot(page, "phone-first-view");

  // Closing the chat gives the map the whole screen; the place stays in the middle of what is seen.
  await page.getByRole("button", { name: "Chat" }).click();
  await expect(page.locator("#chat-panel")).toBeHidden();
  await expect.poll(async () => (await whereIs(page, START.lng, START.lat)).onMap).toBe(true);
  const full = await whereIs(page, START.lng, START.lat);
  const mapBox = (await page.getByTestId("map").boundingBox())!;
  expect(Math.abs(full.y - (mapBox.y + mapBox.height / 2))).toBeLessThanOrEqual(2);
});

for (const { name, size } of [
  { name: "desktop", size: DESKTOP },
  { name: "phone", size: PHONE },
]) {
  test(`a layer the agent adds while the chat is open is shown where it can be seen (${name})`, async ({ page }) => {
    await page.setViewportSize(size);
    gateway.layers.set("luxembourg-dem", { name: "Luxembourg elevation", bounds: DEM_BOUNDS, units: "m", rescale: [150, 560] });
    gateway.answers.push({
      content: "The elevation model of Luxembourg is on the map.",
      steps: [{ frontend: { name: "visualize_collection", arguments: { collection_id: "luxembourg-dem" } } }],
    });
    await openApp(page, stack.url());
    await ask(page, "Show the Luxembourg elevation model");
    await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
    await expect(page.getByRole("region", { name: "Map legend" })).toContainText("Luxembourg elevation");
    await page.waitForFunction(() => Boolean(window.__stacgisMap?.getLayer("raster:luxembourg-dem")));

    const [w, s, e, n] = DEM_BOUNDS;
    const centre = await whereIs(page, (w + e) / 2, (s + n) / 2);
    const nw = await whereIs(page, w, n);
    const se = await whereIs(page, e, s);
    expect(centre.onMap, "the layer's centre is not under a panel").toBe(true);
    // The layer's own colour (the scripted tiles are orange) is drawn there.
    await page.waitForFunction(() => window.__stacgisMap!.areTilesLoaded());
    const [r, g, b] = await colourAt(page, centre.x, centre.y);
    expect(r > 150 && g < 160 && b < 90, `colour at the layer's centre: ${r}, ${g}, ${b}`).toBe(true);
    // The whole extent lies on the map and, on a phone, above the chat sheet.
    const mapBox = (await page.getByTestId("map").boundingBox())!;
    expect(nw.x).toBeGreaterThanOrEqual(mapBox.x);
    expect(nw.y).toBeGreaterThanOrEqual(mapBox.y);
    expect(se.x).toBeLessThanOrEqual(mapBox.x + mapBox.width);
    expect(se.y).toBeLessThanOrEqual(centre.sheetTop !== null && name === "phone" ? centre.sheetTop : mapBox.y + mapBox.height);
    // Zoomed to it, not a speck.
    expect(se.x - nw.x).toBeGreaterThan(100);
    await shot(page, `layer-visible-${name}`);
  });

  test(`basemaps are named for what they show (${name})`, async ({ page }) => {
    await page.setViewportSize(size);
    await openApp(page, stack.url());
    const picker = page.getByRole("combobox", { name: "Basemap" });
    await expect(picker.locator("option")).toHaveText(["Light outlines", "Dark outlines", "Green outlines"]);
    // Without an imagery style configured, nothing promises satellite pictures.
    await expect(picker).not.toContainText(/satellite/i);
    await picker.selectOption({ label: "Green outlines" });
    await page.waitForFunction(() => window.__stacgisMap?.getStyle()?.name === "stacgis-offline-satellite");
    await expect(picker.locator("option:checked")).toHaveText("Green outlines");
    await shot(page, `basemap-green-${name}`);
  });

  test(`country names are drawn on every offline basemap, from the bundled font (${name})`, async ({ page }) => {
    const problems: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error" || (message.type() === "warning" && /glyph|font/i.test(message.text()))) problems.push(message.text());
    });
    await page.setViewportSize(size);
    await openApp(page, stack.url());
    const picker = page.getByRole("combobox", { name: "Basemap" });
    for (const [label, style] of [
      ["Light outlines", "stacgis-offline-light"],
      ["Dark outlines", "stacgis-offline-dark"],
      ["Green outlines", "stacgis-offline-satellite"],
    ]) {
      await picker.selectOption({ label });
      await page.waitForFunction((want) => window.__stacgisMap?.getStyle()?.name === want, style);
      // Placed names (a name is placed only once its glyphs are drawn); the biggest country in view
      // has the first claim on its place, so it is always among them.
      const shown = await page.waitForFunction(() => {
        const map = window.__stacgisMap;
        if (!map?.getSource("country-labels")) return null;
        const placed = map.queryRenderedFeatures({ layers: ["country-labels"] }).map((f) => String(f.properties.name));
        const bounds = map.getBounds();
        const inView = map
          .querySourceFeatures("country-labels")
          .filter((f) => f.geometry.type === "Point" && bounds.contains(f.geometry.coordinates as [number, number]))
          .sort((a, b) => Number(b.properties.area) - Number(a.properties.area));
        if (!inView.length || !placed.includes(String(inView[0].properties.name))) return null;
        return { placed, biggest: String(inView[0].properties.name) };
      }, undefined, { timeout: 30_000 });
      const { placed, biggest } = (await shown.jsonValue())!;
      expect(placed.length, `names placed on ${label}`).toBeGreaterThanOrEqual(3);
      expect(placed).toContain(biggest);
    }
    expect(problems).toEqual([]);
    await shot(page, `basemap-names-${name}`);
  });
}
