import { expect, test, type Page } from "@playwright/test";
import { seriousViolations } from "./axe";
import { DESKTOP, PHONE, ask, lastAnswer, openApp, serveWithFakeGateway, shot } from "./fakeStack";

/**
 * A conversation's map (view, layers, selection) is saved with it on the gateway and put back
 * when the page is reloaded or the conversation opened again; a new conversation starts with a
 * clear selection. Served with Vite against the stand-in gateway.
 */

const stack = serveWithFakeGateway();
const { gateway } = stack;

const VIEWPORTS = [
  { name: "desktop", size: DESKTOP },
  { name: "phone", size: PHONE },
];

function view(page: Page) {
  return page.evaluate(() => {
    const map = window.__stacgisMap!;
    const c = map.getCenter();
    return { lng: c.lng, lat: c.lat, zoom: map.getZoom(), bearing: map.getBearing(), layer: Boolean(map.getLayer("raster:dem-lux")) };
  });
}

async function openSidebar(page: Page): Promise<void> {
  const toggle = page.getByRole("button", { name: "Conversations", exact: true });
  if ((await toggle.getAttribute("aria-expanded")) === "false") await toggle.click();
}

async function reload(page: Page): Promise<void> {
  await page.reload();
  await expect(page.getByTestId("model")).toContainText("fake-model", { timeout: 60_000 });
  await page.waitForFunction(() => Boolean(window.__stacgisMap?.loaded()), undefined, { timeout: 60_000 });
}

for (const { name, size } of VIEWPORTS) {
  test.describe(`at ${name} size`, () => {
    test.use({ viewport: size });

    test("the map is saved with the conversation and restored after a reload", async ({ page }) => {
      gateway.layers.set("dem-lux", { name: "Elevation", bounds: [5.7, 49.4, 6.6, 50.2], units: "m", rescale: "200,560" });
      gateway.answers.push({ content: "Here is the elevation.", steps: [{ frontend: { name: "visualize_collection", arguments: { collection_id: "dem-lux" } } }] });
      await openApp(page, stack.url());
      await ask(page, `Show the elevation of Luxembourg (${name})`);
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
      await page.waitForFunction(() => Boolean(window.__stacgisMap!.getLayer("raster:dem-lux")));

      // The user draws a point and turns the map; each change is saved with the conversation.
      await page.getByRole("button", { name: "Draw point" }).click();
      const box = (await page.getByTestId("map").boundingBox())!;
      await page.mouse.click(Math.round(box.x + box.width * 0.5), Math.round(box.y + box.height * 0.3));
      await expect(page.getByRole("button", { name: "Clear point" })).toBeVisible();
      await page.evaluate(() => window.__stacgisMap!.jumpTo({ center: [6.2, 49.75], zoom: 8.5, bearing: 25 }));
      await expect
        .poll(() => {
          const last = gateway.mapSaves.at(-1)?.state as { view?: { zoom?: number; bearing?: number }; layers?: unknown[]; drawn_geometry?: unknown } | undefined;
          return last && [last.view?.zoom, last.view?.bearing, last.layers?.length, Boolean(last.drawn_geometry)];
        })
        .toEqual([8.5, 25, 1, true]);
      const session = gateway.mapSaves.at(-1)!.sessionId;
      expect(gateway.mapSaves.every((save) => save.sessionId === session)).toBe(true);

      // Elsewhere in the meantime, so the reload has to put it back.
      await reload(page);
      await expect.poll(async () => {
        const v = await view(page);
        return [Math.round(v.lng * 100) / 100, Math.round(v.lat * 100) / 100, v.zoom, Math.round(v.bearing), v.layer];
      }).toEqual([6.2, 49.75, 8.5, 25, true]);
      await expect(page.getByRole("button", { name: "Clear point" })).toBeVisible();
      await expect(page.locator(".legend")).toContainText("Elevation");
      expect(await seriousViolations(page)).toEqual([]);
      await shot(page, `map-state-restored-${name}`);

      // A new conversation starts with a clear selection; opening the old one brings its map back.
      await openSidebar(page);
      await page.getByRole("button", { name: "+ New conversation" }).click();
      await expect(page.getByRole("button", { name: "Clear point" })).toBeHidden();
      await page.evaluate(() => window.__stacgisMap!.jumpTo({ center: [0, 0], zoom: 2, bearing: 0 }));
      await openSidebar(page);
      await page.locator(`[data-session-id="${session}"] .session-open`).click();
      await expect.poll(async () => Math.round((await view(page)).zoom * 10) / 10).toBe(8.5);
      await expect(page.getByRole("button", { name: "Clear point" })).toBeVisible();
    });
  });
}
