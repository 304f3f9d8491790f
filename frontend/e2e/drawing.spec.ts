import { expect, test, type Page } from "@playwright/test";
import { seriousViolations } from "./axe";
import { DESKTOP, PHONE, ask, lastAnswer, openApp, serveWithFakeGateway, shot } from "./fakeStack";

/**
 * The coordinates under the pointer, and drawing a point or a line (besides an area) that
 * goes with the next message as its drawn geometry. Served with Vite against the stand-in gateway.
 */

const stack = serveWithFakeGateway();
const { gateway } = stack;

const VIEWPORTS = [
  { name: "desktop", size: DESKTOP },
  { name: "phone", size: PHONE },
];

/** A page position on the map, from fractions of the map's box (kept in the part no panel covers). */
async function at(page: Page, fx: number, fy: number): Promise<{ x: number; y: number }> {
  const box = (await page.getByTestId("map").boundingBox())!;
  // Whole pixels: mouse events carry whole CSS pixels, and at a world view one pixel is a tenth of a degree.
  return { x: Math.round(box.x + box.width * fx), y: Math.round(box.y + box.height * fy) };
}

/** The longitude and latitude the map has at a page position. */
function lngLatAt(page: Page, p: { x: number; y: number }): Promise<[number, number]> {
  return page.evaluate(({ x, y }) => {
    const map = window.__stacgisMap!;
    const box = map.getContainer().getBoundingClientRect();
    const ll = map.unproject([x - box.left, y - box.top]).wrap();
    return [ll.lng, ll.lat] as [number, number];
  }, p);
}

/** "49.61000° N, 6.13000° E" as [lng, lat]. */
function parseReadout(text: string): [number, number] {
  const m = /^([\d.]+)° ([NS]), ([\d.]+)° ([EW])$/.exec(text.trim());
  expect(m, `readout ${text}`).not.toBeNull();
  return [Number(m![3]) * (m![4] === "W" ? -1 : 1), Number(m![1]) * (m![2] === "S" ? -1 : 1)];
}

for (const { name, size } of VIEWPORTS) {
  test.describe(`at ${name} size`, () => {
    test.use({ viewport: size });

    test("the coordinates under the pointer are shown where the map can be seen", async ({ page }) => {
      await openApp(page, stack.url());
      const readout = page.getByTestId("coords");
      await expect(readout).toHaveText("Point at the map for coordinates");
      const p = await at(page, 0.45, 0.3);
      await page.mouse.move(p.x, p.y);
      await expect(readout).toHaveText(/° [NS], .*° [EW]$/);
      const [lng, lat] = parseReadout((await readout.textContent()) ?? "");
      const [expectLng, expectLat] = await lngLatAt(page, p);
      expect(Math.abs(lng - expectLng)).toBeLessThan(0.001);
      expect(Math.abs(lat - expectLat)).toBeLessThan(0.001);
      // Inside the map and clear of the chat sheet (on a phone it lies over the map's lower part).
      const box = (await readout.boundingBox())!;
      const mapBox = (await page.getByTestId("map").boundingBox())!;
      expect(box.y + box.height).toBeLessThanOrEqual(mapBox.y + mapBox.height);
      const sheet = (await page.locator("#chat-panel").boundingBox())!;
      const overlaps = box.x < sheet.x + sheet.width && sheet.x < box.x + box.width && box.y < sheet.y + sheet.height && sheet.y < box.y + box.height;
      expect(overlaps, "the readout lies under the chat panel").toBe(false);
      await shot(page, `coordinates-${name}`);
    });

    test("a point and a line are drawn and sent with the message", async ({ page }) => {
      gateway.answers.push({ content: "The point is on land." }, { content: "The line crosses two countries." });
      await openApp(page, stack.url());

      // A point: one click.
      await page.getByRole("button", { name: "Draw point" }).click();
      await expect(page.getByRole("toolbar", { name: "Map tools" }).getByRole("status")).toHaveText(/place the point/);
      const p = await at(page, 0.4, 0.2);
      await page.mouse.click(p.x, p.y);
      const chip = page.getByTestId("context-area");
      await expect(chip).toHaveText(/^Drawn point \([\d.]+° [NS], [\d.]+° [EW]\)/);
      await shot(page, `draw-point-${name}`);
      await ask(page, "Is the drawn point on land?");
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
      const point = gateway.requests.at(-1)?.spatial_context?.drawn_geometry as { type: string; coordinates: number[] };
      expect(point.type).toBe("Point");
      const [lng, lat] = await lngLatAt(page, p);
      expect(Math.abs(point.coordinates[0] - lng)).toBeLessThan(0.001);
      expect(Math.abs(point.coordinates[1] - lat)).toBeLessThan(0.001);

      // A line: three clicks, then Finish line; it replaces the point.
      await page.getByRole("button", { name: "Draw line" }).click();
      for (const [fx, fy] of [
        [0.25, 0.18],
        [0.45, 0.28],
        [0.65, 0.2],
      ]) {
        const q = await at(page, fx, fy);
        await page.mouse.click(q.x, q.y);
      }
      await expect(page.getByRole("toolbar", { name: "Map tools" }).getByRole("status")).toContainText("(3)");
      expect(await seriousViolations(page)).toEqual([]);
      await page.getByRole("button", { name: "Finish line" }).click();
      await expect(chip).toHaveText(/^Drawn line \(3 points\)/);
      await expect(page.getByRole("button", { name: "Clear line" })).toBeVisible();
      await shot(page, `draw-line-${name}`);
      await ask(page, "Which countries does the drawn line cross?");
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
      const line = gateway.requests.at(-1)?.spatial_context?.drawn_geometry as { type: string; coordinates: number[][] };
      expect(line.type).toBe("LineString");
      expect(line.coordinates).toHaveLength(3);

      await page.getByRole("button", { name: "Clear drawn line" }).click();
      await expect(chip).toHaveCount(0);
    });
  });
}
