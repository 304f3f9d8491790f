import { expect, test, type Page } from "@playwright/test";
import type { PlaceStatus } from "../src/api/client";
import { PLACE_STATUS_POLL_MS } from "../src/map/placeLoading";
import { seriousViolations } from "./axe";
import { CITY_LABELS, PLACES_LOADED } from "./fakeGateway";
import { PHONE, openApp, serveWithFakeGateway, shot } from "./fakeStack";

/**
 * While vector-tools is still loading its place names (a first start), the map says so under the place
 * search, with the counts of GET /places/status, asked every 5 s until nothing loads; when the load
 * ends the view's city names are asked again without a move. Served with Vite against the stand-in
 * gateway.
 */

const stack = serveWithFakeGateway();
const { gateway } = stack;

function loadingCities(done: number, total = 33_602): PlaceStatus {
  return {
    loading: true,
    datasets: [
      { id: "countries", state: "loaded", features: 258 },
      { id: "cities", state: "loading", stage: "embedding", done, total },
    ],
  };
}

const notice = (page: Page) => page.getByRole("status").filter({ hasText: "Place names are still loading" });

test("the notice shows the counts while the names load, follows them, and goes when the load ends", async ({ page }) => {
  gateway.placeStatus = loadingCities(12_288);
  await openApp(page, stack.url());
  await expect(notice(page)).toHaveText(
    "Place names are still loading — cities: 12,288 of 33,602 embedded. Search finds loaded places only until then.",
  );
  // Under the search box, and the box still works meanwhile.
  const box = page.getByRole("combobox", { name: "Search places" });
  const [boxArea, noticeArea] = [await box.boundingBox(), await notice(page).boundingBox()];
  expect(noticeArea!.y).toBeGreaterThanOrEqual(boxArea!.y + boxArea!.height);
  await box.fill("Berl");
  await expect(page.getByRole("listbox", { name: "Places" }).getByRole("option")).toHaveCount(1);
  await box.press("Escape");
  expect(await seriousViolations(page)).toEqual([]);
  await shot(page, "place-loading-desktop");

  gateway.placeStatus = loadingCities(20_480);
  await expect(notice(page)).toContainText("cities: 20,480 of 33,602 embedded");

  gateway.placeStatus = PLACES_LOADED;
  await expect(notice(page)).toHaveCount(0);
  await expect(page.locator(".place-loading")).toHaveCount(0);
  // Nothing loads any more: the app stops asking.
  const asked = gateway.placeStatusRequests;
  await page.waitForTimeout(PLACE_STATUS_POLL_MS + 1500);
  expect(gateway.placeStatusRequests).toBe(asked);
});

/** The city names MapLibre has placed on the map (collided ones are not). */
async function renderedCityNames(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    window.__stacgisMap!.queryRenderedFeatures({ layers: ["city-labels"] }).map((f) => String(f.properties.name)),
  );
}

test("when the load ends the view's city names are asked again and drawn, without a move", async ({ page }) => {
  // During the load the cities are not in yet: the labels endpoint names none.
  gateway.placeStatus = loadingCities(12_288);
  gateway.cityLabels.length = 0;
  await openApp(page, stack.url());
  await expect(notice(page)).toBeVisible();
  await page.evaluate(() => window.__stacgisMap!.jumpTo({ center: [11.5, 52.5], zoom: 6 }));
  await expect.poll(() => gateway.labelRequests.length).toBe(1);
  await page.waitForFunction(() => window.__stacgisMap!.loaded() && !window.__stacgisMap!.isMoving());
  expect(await renderedCityNames(page)).toEqual([]);
  // From here on the map is not moved: count any move all the same.
  await page.evaluate(() => {
    const moves = window as unknown as { __moves: number };
    moves.__moves = 0;
    window.__stacgisMap!.on("movestart", () => (moves.__moves += 1));
  });

  gateway.cityLabels.push(...CITY_LABELS);
  gateway.placeStatus = PLACES_LOADED;
  await expect(notice(page)).toHaveCount(0);
  await expect.poll(() => gateway.labelRequests.length).toBe(2);
  expect(gateway.labelRequests[1]).toEqual(gateway.labelRequests[0]);
  await expect.poll(() => renderedCityNames(page)).toEqual(expect.arrayContaining(["Berlin", "Hamburg"]));
  expect(await page.evaluate(() => (window as unknown as { __moves: number }).__moves)).toBe(0);
  await shot(page, "place-loading-ended-city-labels");
  // The status is asked no more, and so the names are not asked again either.
  await page.waitForTimeout(PLACE_STATUS_POLL_MS + 1500);
  expect(gateway.labelRequests).toHaveLength(2);
});

test("nothing is said when nothing is loading, and the status is asked once", async ({ page }) => {
  await openApp(page, stack.url());
  // Asked once at start (StrictMode's mount-unmount-mount included), then not again.
  await expect.poll(() => gateway.placeStatusRequests).toBe(1);
  await page.waitForTimeout(PLACE_STATUS_POLL_MS + 1500);
  expect(gateway.placeStatusRequests).toBe(1);
  await expect(page.locator(".place-loading")).toHaveCount(0);
  await expect(notice(page)).toHaveCount(0);
});

test("a failed status request shows nothing and is asked again on the next tick", async ({ page }) => {
  gateway.placeStatus = null; // the gateway answers 503
  await openApp(page, stack.url());
  await expect.poll(() => gateway.placeStatusRequests).toBeGreaterThanOrEqual(1);
  await expect(page.locator(".place-loading")).toHaveCount(0);
  await expect(page.locator(".status-banner")).toHaveCount(0);
  gateway.placeStatus = loadingCities(4_096);
  await expect(notice(page)).toContainText("cities: 4,096 of 33,602 embedded");
  expect(gateway.placeStatusRequests).toBeGreaterThanOrEqual(2);
});

test.describe("at phone size", () => {
  test.use({ viewport: PHONE });

  test("the notice fits under the search box", async ({ page }) => {
    gateway.placeStatus = loadingCities(12_288);
    await openApp(page, stack.url());
    await expect(notice(page)).toContainText("cities: 12,288 of 33,602 embedded");
    const area = await notice(page).boundingBox();
    expect(area!.x + area!.width).toBeLessThanOrEqual(PHONE.width);
    await shot(page, "place-loading-phone");
  });
});
