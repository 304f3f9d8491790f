import { expect, test, type Page } from "@playwright/test";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ViteDevServer } from "vite";
import { CITY_LABELS, FakeGateway, PLACES_LOADED } from "./fakeGateway";

/**
 * The app served by Vite against the stand-in gateway (./fakeGateway.ts), for
 * browser tests that script a run's events themselves; no `make up` needed.
 * Call `serveWithFakeGateway()` at the top of a spec file: it starts both servers once
 * for the file and stops them after.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const SCREENSHOTS = join(ROOT, "e2e", "screenshots");

export const DESKTOP = { width: 1440, height: 900 };
export const PHONE = { width: 390, height: 844 };

export interface FakeStack {
  gateway: FakeGateway;
  url: () => string;
}

export function serveWithFakeGateway(): FakeStack {
  const gateway = new FakeGateway();
  let vite: ViteDevServer | null = null;
  let appUrl = "";

  test.beforeAll(async () => {
    test.setTimeout(120_000);
    const backend = await gateway.start();
    // vite.config.ts reads the proxy targets when it is loaded.
    process.env.STACGIS_API_URL = backend;
    process.env.STACGIS_TILES_URL = backend;
    const { createServer } = await import("vite");
    vite = await createServer({
      root: ROOT,
      configFile: join(ROOT, "vite.config.ts"),
      logLevel: "error",
      server: { host: "127.0.0.1", port: 0, strictPort: false, hmr: false },
    });
    await vite.listen();
    appUrl = vite.resolvedUrls?.local[0] ?? "";
    expect(appUrl, "vite did not report its address").toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
  });

  test.afterAll(async () => {
    await vite?.close();
    await gateway.stop();
    delete process.env.STACGIS_API_URL;
    delete process.env.STACGIS_TILES_URL;
  });

  test.afterEach(() => {
    // One test's unused answers must not answer the next test's questions.
    gateway.answers.length = 0;
    gateway.requests.length = 0;
    gateway.placeSearches.length = 0;
    gateway.labelRequests.length = 0;
    gateway.cityLabels.splice(0, Infinity, ...CITY_LABELS);
    gateway.placeStatus = PLACES_LOADED;
    gateway.placeStatusRequests = 0;
    gateway.pointRequests.length = 0;
    gateway.points.clear();
    gateway.mapSaves.length = 0;
    gateway.busy = false;
    gateway.refuseNext = null;
    gateway.models = ["fake-model"];
    gateway.release();
  });

  return { gateway, url: () => appUrl };
}

/** Opens the app and waits until the map has loaded and the gateway named its model. */
export async function openApp(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await expect(page.getByTestId("model")).toContainText("fake-model", { timeout: 60_000 });
  await page.waitForFunction(() => Boolean(window.__stacgisMap?.loaded()), undefined, { timeout: 60_000 });
}

export async function ask(page: Page, text: string): Promise<void> {
  const input = page.getByRole("textbox", { name: "Message" });
  await input.fill(text);
  await input.press("Enter");
}

export function lastAnswer(page: Page) {
  return page.locator("article.message-assistant").last();
}

/** A picture of the page (or one part of it) for review, once the map has settled. */
export async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page
    .waitForFunction(() => window.__stacgisMap?.areTilesLoaded() && !window.__stacgisMap.isMoving(), undefined, { timeout: 5000 })
    .catch(() => undefined);
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`) });
}

/** WCAG contrast ratio of two CSS colours given as rgb()/rgba() (alpha ignored: both are opaque here). */
export function contrast(a: string, b: string): number {
  const lum = (css: string) => {
    const [r, g, bl] = (css.match(/[\d.]+/g) ?? []).slice(0, 3).map(Number);
    const lin = (c: number) => {
      const v = c / 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    };
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(bl);
  };
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}
