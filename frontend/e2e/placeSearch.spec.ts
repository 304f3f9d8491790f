import { expect, test, type Page } from "@playwright/test";
import { seriousViolations } from "./axe";
import { DESKTOP, PHONE, openApp, serveWithFakeGateway, shot } from "./fakeStack";

/**
 * The place search box over the map: typing lists places (name, kind, country) from the
 * gateway's GET /places/search; choosing one (keyboard or pointer) flies the map there, where
 * the view's city names (GET /places/labels) are drawn. Served with Vite against the stand-in gateway.
 */

const stack = serveWithFakeGateway();
const { gateway } = stack;

const VIEWPORTS = [
  { name: "desktop", size: DESKTOP },
  { name: "phone", size: PHONE },
];

async function settledView(page: Page): Promise<{ lng: number; lat: number; zoom: number }> {
  await page.waitForFunction(() => !window.__stacgisMap!.isMoving(), undefined, { timeout: 20_000 });
  return page.evaluate(() => {
    const map = window.__stacgisMap!;
    const c = map.getCenter();
    return { lng: c.lng, lat: c.lat, zoom: map.getZoom() };
  });
}

/** The city names MapLibre has placed on the map (collided ones are not). */
async function renderedCityNames(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    window.__stacgisMap!.queryRenderedFeatures({ layers: ["city-labels"] }).map((f) => String(f.properties.name)),
  );
}

for (const { name, size } of VIEWPORTS) {
  test.describe(`at ${name} size`, () => {
    test.use({ viewport: size });

    test("typing lists places and choosing one by keyboard or pointer flies the map there", async ({ page }) => {
      await openApp(page, stack.url());
      const box = page.getByRole("combobox", { name: "Search places" });
      const list = page.getByRole("listbox", { name: "Places" });
      await expect(box).toHaveAttribute("aria-expanded", "false");

      await box.fill("Lu");
      await expect(list.getByRole("option")).toHaveCount(3);
      await expect(box).toHaveAttribute("aria-expanded", "true");
      await box.fill("Luxem");
      const options = list.getByRole("option");
      await expect(options).toHaveCount(2);
      await expect(options.nth(0)).toHaveText("Luxembourgcountry");
      await expect(options.nth(1)).toHaveText("Luxembourgcity, Luxembourg");
      expect(await seriousViolations(page)).toEqual([]);
      await shot(page, `place-search-${name}`);

      // Down, down, up: the country is the active option; Enter takes it and fits its box.
      await box.press("ArrowDown");
      await box.press("ArrowDown");
      await expect(options.nth(1)).toHaveAttribute("aria-selected", "true");
      await box.press("ArrowUp");
      await expect(options.nth(0)).toHaveAttribute("aria-selected", "true");
      await expect(box).toHaveAttribute("aria-activedescendant", (await options.nth(0).getAttribute("id"))!);
      await box.press("Enter");
      await expect(list).toBeHidden();
      await expect(box).toHaveValue("Luxembourg");
      const country = await settledView(page);
      expect(country.zoom).toBeGreaterThan(6);
      expect(country.lng).toBeGreaterThan(5.7);
      expect(country.lng).toBeLessThan(6.6);
      await shot(page, `place-search-chosen-${name}`);

      // Escape closes the list without moving; a pointer choice of a city zooms to its point.
      await box.fill("Berl");
      await expect(list.getByRole("option")).toHaveCount(1);
      await box.press("Escape");
      await expect(list).toBeHidden();
      await box.press("ArrowDown");
      await expect(list).toBeVisible();
      await list.getByRole("option", { name: /Berlin/ }).click();
      await expect(list).toBeHidden();
      const city = await settledView(page);
      expect(Math.abs(city.lng - 13.41)).toBeLessThan(0.05);
      expect(Math.abs(city.lat - 52.52)).toBeLessThan(0.05);
      expect(city.zoom).toBeCloseTo(10, 1);
      // The city's own name is drawn there, asked for with the view's box.
      await expect.poll(() => renderedCityNames(page)).toContain("Berlin");
      const [west, south, east, north] = gateway.labelRequests.at(-1)!.bbox;
      expect(west < 13.41 && 13.41 < east && south < 52.52 && 52.52 < north).toBe(true);
      await shot(page, `city-label-${name}`);

      await box.fill("Qwerty");
      await expect(page.locator(".place-empty")).toHaveText("No place found");
      await box.press("Escape");
      await box.press("Escape");
      await expect(box).toHaveValue("");
      expect(gateway.placeSearches).toContain("Luxem");
    });
  });
}
