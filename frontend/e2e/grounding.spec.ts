import { expect, test, type Page } from "@playwright/test";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ViteDevServer } from "vite";
import { FakeGateway } from "./fakeGateway";

/**
 * Numbers of an answer marked by the orchestrator's grounding check. The stack's
 * orchestrator decides the check itself, so this test serves the app with Vite
 * against a stand-in gateway (./fakeGateway.ts) that sends a chosen `done`
 * grounding over the real SSE wire; it needs no `make up`.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const SCREENSHOTS = join(ROOT, "e2e", "screenshots");

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

/** The code-point offsets of `text` in `content`, as the check reports them. */
function span(content: string, text: string): { start: number; end: number } {
  const at = content.indexOf(text);
  if (at < 0) throw new Error(`${text} is not in the answer`);
  const start = [...content.slice(0, at)].length;
  return { start, end: start + [...text].length };
}

async function openApp(page: Page): Promise<void> {
  await page.goto(appUrl);
  await expect(page.getByTestId("model")).toContainText("fake-model", { timeout: 60_000 });
}

async function ask(page: Page, text: string): Promise<void> {
  const input = page.getByRole("textbox", { name: "Message" });
  await input.fill(text);
  await input.press("Enter");
}

test("an answer's unsupported numbers are marked and supported ones name their tool", async ({ page }, testInfo) => {
  const content = [
    "The mean elevation of Luxembourg 🇱🇺 is **348 m** (rounded from the DEM).",
    "",
    "| place | elevation |",
    "|---|---|",
    "| Kneiff | 560 m |",
    "| Buurgplaatz | 1,929 m |",
    "",
    "About 12.5 % of the country is forest.",
  ].join("\n");
  const stats = { mean: 348.21, min: 129.4, max: 559.6, count: 16384 };
  gateway.answers.push(
    {
      content,
      tools: [
        { name: "get_raster_statistics", arguments: { collection_id: "luxembourg-dem" }, result: JSON.stringify(stats) },
        { name: "query_raster_point", arguments: { collection_id: "luxembourg-dem", lat: 50.05, lon: 6.03 }, result: '{"value": 559.6}' },
      ],
      grounding: {
        numbers: [
          { text: "348 m", value: 348, unit: "m", ...span(content, "348 m"), supported: true, callId: "call-1", toolName: "get_raster_statistics", sourceValue: stats.mean, match: "rounded" },
          { text: "560 m", value: 560, unit: "m", ...span(content, "560 m"), supported: true, callId: "call-2", toolName: "query_raster_point", sourceValue: 559.6, match: "rounded" },
          { text: "1,929 m", value: 1929, unit: "m", ...span(content, "1,929 m"), supported: false },
          { text: "12.5 %", value: 12.5, unit: "%", ...span(content, "12.5 %"), supported: false },
        ],
        supportedCount: 2,
        unsupportedCount: 2,
      },
    },
    // A second conversation's answer without any check (as from an older orchestrator).
    { content: "Luxembourg borders Belgium, France and Germany; it has 12 cantons." },
  );

  await openApp(page);
  await ask(page, "How high is Luxembourg?");
  const answer = page.locator("article.message-assistant").last();
  await expect(answer).toHaveAttribute("data-status", "complete", { timeout: 30_000 });
  const text = answer.getByTestId("answer");

  const unsupported = text.locator("[data-grounding=unsupported]");
  await expect(unsupported).toHaveText(["1,929 m", "12.5 %"]);
  await expect(unsupported.first()).toHaveAttribute("title", "Not found in any tool result of this answer");
  // Inside the table cell, with a dotted underline and the warning marker after it.
  await expect(text.locator("td [data-grounding=unsupported]")).toHaveText("1,929 m");
  const look = await unsupported.first().evaluate((el) => ({
    decoration: getComputedStyle(el).textDecorationStyle,
    marker: getComputedStyle(el, "::after").content,
  }));
  expect(look.decoration).toBe("dotted");
  expect(look.marker).toContain("⚠");

  const supported = text.locator("[data-grounding=supported]");
  await expect(supported).toHaveText(["348 m", "560 m"]);
  await expect(supported.first()).toHaveAttribute("title", "From get_raster_statistics: 348.21 (rounded)");
  await expect(supported.nth(1)).toHaveAttribute("title", "From query_raster_point: 559.6 (rounded)");
  const plain = await supported.first().evaluate((el) => getComputedStyle(el).textDecorationLine);
  expect(plain, "a supported number is not underlined until hovered").toBe("none");
  // The text reads as the model wrote it (the marker is generated content, not text).
  await expect(text.locator("p").first()).toHaveText("The mean elevation of Luxembourg 🇱🇺 is 348 m (rounded from the DEM).");

  const summary = answer.getByTestId("grounding-summary");
  await expect(summary).toHaveText("⚠ 2 numbers not found in the tool results");
  await expect(summary).toHaveClass(/grounding-warning/);

  await supported.first().hover();
  mkdirSync(SCREENSHOTS, { recursive: true });
  await answer.screenshot({ path: testInfo.outputPath("grounded-answer.png") });
  await answer.screenshot({ path: join(SCREENSHOTS, "grounded-answer.png") });
  await page.screenshot({ path: testInfo.outputPath("grounded-page.png") });

  // Another conversation: an answer without a check renders with no marks and no line.
  const sidebar = page.getByRole("navigation", { name: "Conversations" });
  if (!(await sidebar.isVisible())) await page.getByRole("button", { name: "Conversations" }).click();
  await sidebar.getByRole("button", { name: "+ New conversation" }).click();
  await expect(page.locator("article.message")).toHaveCount(0);
  await ask(page, "Which countries border Luxembourg?");
  const second = page.locator("article.message-assistant").last();
  await expect(second).toHaveAttribute("data-status", "complete", { timeout: 30_000 });
  await expect(second.getByTestId("answer")).toHaveText("Luxembourg borders Belgium, France and Germany; it has 12 cantons.");
  await expect(second.locator("[data-grounding]")).toHaveCount(0);
  await expect(second.getByTestId("grounding-summary")).toHaveCount(0);

  // Back to the first: its history comes from the gateway (which keeps no check), the marks come back.
  await expect(sidebar.locator("li.session-item")).toHaveCount(2);
  await sidebar.locator("li.session-item", { hasText: "How high is Luxembourg?" }).locator("button.session-open").click();
  await expect(page.locator("article.message-user .message-text")).toHaveText(["How high is Luxembourg?"]);
  const restored = page.locator("article.message-assistant").last();
  await expect(restored.locator("[data-grounding=unsupported]")).toHaveText(["1,929 m", "12.5 %"]);
  await expect(restored.locator("[data-grounding=supported]")).toHaveText(["348 m", "560 m"]);
  await expect(restored.getByTestId("grounding-summary")).toHaveText("⚠ 2 numbers not found in the tool results");
});
