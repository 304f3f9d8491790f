import { expect, test, type Page } from "@playwright/test";
import { seriousViolations } from "./axe";
import { DESKTOP, PHONE, ask, lastAnswer, openApp, serveWithFakeGateway, shot } from "./fakeStack";

/**
 * Identify: a click on the map with a raster layer on shows the layer's value there, with its
 * unit and collection, from the tile server's `GET /tiles/{id}/point` (here the stand-in
 * gateway's); outside the data it says so, a failure is shown politely, Escape and × close it.
 */

const stack = serveWithFakeGateway();
const { gateway } = stack;

const VIEWPORTS = [
  { name: "desktop", size: DESKTOP },
  { name: "phone", size: PHONE },
];

const DEM = "Digital elevation model of Luxembourg";

/** The page position of a longitude and latitude on the map. */
function project(page: Page, lng: number, lat: number): Promise<{ x: number; y: number }> {
  return page.evaluate(
    ([lng, lat]) => {
      const map = window.__stacgisMap!;
      const box = map.getContainer().getBoundingClientRect();
      const p = map.project([lng, lat]);
      return { x: Math.round(box.left + p.x), y: Math.round(box.top + p.y) };
    },
    [lng, lat],
  );
}

function overlaps(a: { x: number; y: number; width: number; height: number }, b: { x: number; y: number; width: number; height: number }) {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

for (const { name, size } of VIEWPORTS) {
  test.describe(`at ${name} size`, () => {
    test.use({ viewport: size });

    test("a click on a raster layer shows its value there with unit and collection", async ({ page }) => {
      gateway.layers.set("luxembourg-dem", { name: "luxembourg-dem", description: DEM, bounds: [5.73, 49.45, 6.53, 50.18] });
      gateway.points.set("luxembourg-dem", {
        inside: true,
        pixel_center: [6.1301, 49.6101],
        item: "luxembourg-dem",
        time_note: "collection is not time-resolved",
        values: [{ band: "elevation", value: 301.254, unit: "m" }],
      });
      gateway.answers.push({
        content: "The DEM is on the map.",
        steps: [{ frontend: { name: "visualize_collection", arguments: { collection_id: "luxembourg-dem" } } }],
      });
      await openApp(page, stack.url());

      // Without a raster layer a click asks nothing.
      const before = await project(page, 6.13, 49.61);
      await page.mouse.click(before.x, before.y);
      await expect(page.getByTestId("identify")).toHaveCount(0);
      expect(gateway.pointRequests).toEqual([]);
      // The country there shows its properties instead (e2e/featurePopup.spec.ts); Escape closes them.
      await expect(page.getByTestId("feature-popup")).toBeVisible();
      await page.keyboard.press("Escape");
      await expect(page.getByTestId("feature-popup")).toHaveCount(0);

      await ask(page, "Show the elevation of Luxembourg");
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
      await page.waitForFunction(() => Boolean(window.__stacgisMap!.getLayer("raster:luxembourg-dem")));
      await page.waitForFunction(() => !window.__stacgisMap!.isMoving());

      const p = await project(page, 6.13, 49.61);
      await page.mouse.click(p.x, p.y);
      const panel = page.getByTestId("identify");
      await expect(panel).toBeVisible();
      await expect(panel.getByRole("heading", { name: DEM })).toBeVisible();
      await expect(panel.getByRole("status")).toContainText("elevation");
      await expect(panel.getByRole("status")).toContainText("301.25 m");
      await expect(panel).toContainText("Pixel at 49.61010° N, 6.13010° E");
      await expect(panel).toContainText("item luxembourg-dem");
      // The country clicked too: its properties, collapsed, in the same panel.
      const country = panel.getByTestId("feature-popup");
      await expect(country.locator("summary")).toHaveText("Luxembourg: properties");
      await expect(country.locator("dl")).toBeHidden();
      // The request went beside the tiles with the clicked point.
      const asked = new URL(gateway.pointRequests.at(-1)!, "http://x");
      expect(asked.pathname).toBe("/tiles/luxembourg-dem/point");
      expect(Math.abs(Number(asked.searchParams.get("lon")) - 6.13)).toBeLessThan(0.05);
      expect(Math.abs(Number(asked.searchParams.get("lat")) - 49.61)).toBeLessThan(0.05);
      // In view: inside the map and clear of the chat sheet (on a phone it covers the map's lower part).
      const box = (await panel.boundingBox())!;
      const mapBox = (await page.getByTestId("map").boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(mapBox.x);
      expect(box.x + box.width).toBeLessThanOrEqual(mapBox.x + mapBox.width + 1);
      const sheet = await page.locator("#chat-panel").boundingBox();
      if (sheet) expect(overlaps(box, sheet), "the value lies under the chat panel").toBe(false);
      expect(await seriousViolations(page)).toEqual([]);
      await shot(page, `identify-${name}`);

      // Escape closes it.
      await page.keyboard.press("Escape");
      await expect(panel).toHaveCount(0);

      // Outside the data: no data here, said as such; the close button closes it.
      gateway.points.delete("luxembourg-dem");
      await page.mouse.click(p.x, p.y);
      await expect(panel.getByRole("status")).toContainText("No data here");
      await expect(panel).toContainText(/At [\d.]+° N, [\d.]+° E/);
      await panel.getByRole("button", { name: "Close the value at this point" }).click();
      await expect(panel).toHaveCount(0);

      // A read past its deadline: a polite message, no crash.
      gateway.points.set("luxembourg-dem", { status: 504, field: null, message: "the value at the point took longer than 20 s", code: "deadline_exceeded" });
      await page.mouse.click(p.x, p.y);
      await expect(panel.getByRole("status")).toContainText("The value took too long to read; try again or zoom in.");
      expect(await seriousViolations(page)).toEqual([]);
      await shot(page, `identify-error-${name}`);
      await page.keyboard.press("Escape");
      await expect(panel).toHaveCount(0);
    });
  });
}
