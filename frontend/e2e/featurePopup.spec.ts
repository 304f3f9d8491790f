import { expect, test, type Page } from "@playwright/test";
import { seriousViolations } from "./axe";
import { DESKTOP, PHONE, openApp, serveWithFakeGateway, shot } from "./fakeStack";

/**
 * Feature popups: a click on a vector feature of the map (here a country of the offline basemap)
 * shows its properties; a click where no feature is shows none; Escape and × close it.
 */

const stack = serveWithFakeGateway();

const VIEWPORTS = [
  { name: "desktop", size: DESKTOP },
  { name: "phone", size: PHONE },
];

/** Centres the map on a point (in its visible part: the padding keeps it clear of the chat sheet), then
 * gives its page position and the properties of the country drawn there. */
async function centreOn(page: Page, lng: number, lat: number) {
  await page.evaluate(([lng, lat]) => window.__stacgisMap!.jumpTo({ center: [lng, lat], zoom: 5 }), [lng, lat]);
  // The outlines are cut into tiles for the new view by a worker: wait for them, not for every raster tile.
  await page.waitForFunction(() => !window.__stacgisMap!.isMoving() && window.__stacgisMap!.isSourceLoaded("countries"));
  return page.evaluate(
    ([lng, lat]) => {
      const map = window.__stacgisMap!;
      const box = map.getContainer().getBoundingClientRect();
      const p = map.project([lng, lat]);
      const hit = map.queryRenderedFeatures(p).find((f) => f.layer.id === "countries-fill");
      return { x: Math.round(box.left + p.x), y: Math.round(box.top + p.y), properties: (hit?.properties ?? null) as Record<string, unknown> | null };
    },
    [lng, lat],
  );
}

for (const { name, size } of VIEWPORTS) {
  test.describe(`at ${name} size`, () => {
    test.use({ viewport: size });

    test("a click on a vector feature shows its properties", async ({ page }) => {
      test.setTimeout(150_000); // the first test of the file also waits for Vite to build the app
      await openApp(page, stack.url());
      await page.waitForFunction(() => window.__stacgisMap!.querySourceFeatures("countries").length > 0);
      const germany = await centreOn(page, 10.45, 51.16);
      expect(germany.properties, "no country is drawn there").not.toBeNull();
      await page.mouse.click(germany.x, germany.y);

      const popup = page.getByTestId("feature-popup");
      await expect(popup).toBeVisible();
      await expect(popup.getByRole("heading", { level: 2 })).toHaveText(String(germany.properties!.name));
      const shown = Object.entries(germany.properties!).filter(([, value]) => typeof value === "string");
      expect(shown.length).toBeGreaterThan(0);
      for (const [key, value] of shown) {
        const row = popup.locator(".identify-value").filter({ has: page.locator("dt", { hasText: new RegExp(`^${key}$`) }) });
        await expect(row.locator("dd")).toHaveText(String(value));
      }
      // In view: inside the map.
      const box = (await popup.boundingBox())!;
      const mapBox = (await page.getByTestId("map").boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(mapBox.x);
      expect(box.x + box.width).toBeLessThanOrEqual(mapBox.x + mapBox.width + 1);
      expect(await seriousViolations(page)).toEqual([]);
      await shot(page, `feature-popup-${name}`);

      await page.keyboard.press("Escape");
      await expect(popup).toHaveCount(0);
      await page.mouse.click(germany.x, germany.y);
      await expect(popup).toBeVisible();
      await popup.getByRole("button", { name: "Close the feature's properties" }).click();
      await expect(popup).toHaveCount(0);

      // Open sea: no feature, no popup.
      const sea = await centreOn(page, -30, 40);
      expect(sea.properties).toBeNull();
      await page.mouse.click(sea.x, sea.y);
      await page.waitForTimeout(300);
      await expect(popup).toHaveCount(0);
    });
  });
}
