import { expect, test, type Page } from "@playwright/test";
import { openApp, screenshot } from "./support";

/**
 * City names on the offline basemap against the whole product: the world view shows only country
 * names; after flying to a city with the place search box, the gateway's GET /places/labels
 * (vector-tools' GeoNames cities) gives the view's largest cities and the city's name is drawn.
 */

async function renderedCityNames(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    window.__stacgisMap!.queryRenderedFeatures({ layers: ["city-labels"] }).map((f) => String(f.properties.name)),
  );
}

test("a big city's name is drawn after flying there, and none at the world view", async ({ page }) => {
  await openApp(page);
  await page.waitForFunction(() => !window.__stacgisMap!.isMoving() && window.__stacgisMap!.getZoom() < 4);
  expect(await renderedCityNames(page)).toEqual([]);

  const labels = page.waitForResponse((resp) => resp.url().includes("/api/v1/places/labels?"));
  const box = page.getByRole("combobox", { name: "Search places" });
  await box.fill("Berlin");
  await page.getByRole("listbox", { name: "Places" }).getByRole("option").filter({ hasText: "Germany" }).first().click();
  const answer = await labels;
  expect(answer.status()).toBe(200);
  const body = (await answer.json()) as { labels: { name: string; population: number }[] };
  expect(body.labels.map((label) => label.name)).toContain("Berlin");
  const populations = body.labels.map((label) => label.population);
  expect(populations).toEqual([...populations].sort((a, b) => b - a));

  await expect.poll(() => renderedCityNames(page), { timeout: 30_000 }).toContain("Berlin");
  await screenshot(page, "city-labels-berlin");
});
