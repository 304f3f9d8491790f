import { expect, test, type Page } from "@playwright/test";
import { seriousViolations } from "./axe";
import { DESKTOP, PHONE, ask, lastAnswer, openApp, serveWithFakeGateway, shot } from "./fakeStack";

/**
 * axe-core over every main state of the app, at both sizes: no serious or critical WCAG 2.1
 * A/AA violation anywhere. Served with Vite against the stand-in gateway.
 */

const stack = serveWithFakeGateway();
const { gateway } = stack;

const VIEWPORTS = [
  { name: "desktop", size: DESKTOP },
  { name: "phone", size: PHONE },
];

/** Checks the page as it is now and keeps a picture of it. */
async function audit(page: Page, state: string, viewport: string): Promise<void> {
  expect(await seriousViolations(page), `axe-core in state "${state}"`).toEqual([]);
  await shot(page, `a11y-${state}-${viewport}`);
}

for (const { name, size } of VIEWPORTS) {
  test.describe(`at ${name} size`, () => {
    test.use({ viewport: size });

    test("no serious or critical accessibility violation in any main state", async ({ page }) => {
      gateway.layers.set("luxembourg-dem", { name: "luxembourg-dem", description: "Luxembourg elevation", bounds: [5.73, 49.45, 6.53, 50.18], units: "m", rescale: "200,503", colormap_name: "terrain" });
      const chart = { chart: { type: "line", data: { labels: ["a", "b", "c"], datasets: [{ label: "v", data: [1, 3, 2] }] } } };
      gateway.answers.push(
        {
          content: "**Done.** The DEM is on the map; see [the docs](https://example.org).\n\n| place | m |\n| --- | --- |\n| Kneiff | 560 |",
          steps: [
            { thinking: "The DEM shows it." },
            { tool: { name: "get_raster_info", arguments: { collection_id: "luxembourg-dem" }, result: '{"id": "luxembourg-dem"}' }, hold: true },
            { frontend: { name: "visualize_collection", arguments: { collection_id: "luxembourg-dem" } } },
            { frontend: { name: "generate_chart", arguments: chart } },
          ],
        },
        {
          content: "Saved.",
          steps: [{ approval: { name: "add_knowledge", arguments: { title: "Kneiff" }, result: '{"id": "k-1"}', description: "Adds a **note**." } }],
        },
      );
      await openApp(page, stack.url());
      await audit(page, "empty", name);

      // A run going on: status lines, the live activity feed, Stop.
      await ask(page, "Show the Luxembourg DEM and chart something");
      await expect(page.getByTestId("run-status-composer").locator(".run-status-label")).toHaveText("Calling get_raster_info");
      await audit(page, "running", name);
      await gateway.releaseHeld();

      // A finished answer: Markdown, a table, a chart, the answer's controls.
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
      await expect(lastAnswer(page).locator("figure.chart")).toHaveAttribute("data-chart-ready", "true");
      await audit(page, "answered", name);

      // The approval dialog.
      await ask(page, "Remember that Kneiff is the highest point");
      const dialog = page.getByRole("dialog", { name: "Allow this action?" });
      await expect(dialog).toBeVisible();
      await audit(page, "approval", name);
      await dialog.getByRole("button", { name: "Approve" }).click();
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");

      // The layers panel with a layer, its legend and an error from the catalog.
      await page.getByRole("button", { name: "Layers", exact: true }).click();
      const panel = page.getByRole("region", { name: "Layers" });
      await expect(panel.locator("[data-layer='raster:luxembourg-dem']")).toBeVisible();
      const form = panel.getByRole("form", { name: "Add a collection" });
      await form.getByRole("combobox").fill("no-such-collection");
      await form.getByRole("button", { name: "Add" }).click();
      await expect(form.getByRole("alert")).toBeVisible();
      await audit(page, "layers", name);
      await page.getByRole("button", { name: "Layers", exact: true }).click();

      // Drawing a line.
      await page.getByRole("button", { name: "Draw line" }).click();
      const box = (await page.getByTestId("map").boundingBox())!;
      await page.mouse.click(box.x + box.width * 0.6, box.y + box.height * 0.35);
      await page.mouse.click(box.x + box.width * 0.8, box.y + box.height * 0.4);
      await audit(page, "drawing", name);
      await page.getByRole("button", { name: "Finish line" }).click();

      // The conversations, searched.
      const nav = page.getByRole("navigation", { name: "Conversations" });
      if (!(await nav.isVisible())) await page.getByRole("button", { name: "Conversations" }).click();
      await nav.getByRole("searchbox", { name: "Search conversations" }).fill("luxembourg");
      await audit(page, "sessions", name);

      // Queued: every slot busy.
      if (name === "phone") await page.getByRole("button", { name: "Chat" }).click();
      gateway.busy = true;
      gateway.answers.push({ content: "Not reached." });
      await ask(page, "And the slope?");
      await expect(page.locator("[data-notice=queued]")).toBeVisible();
      await audit(page, "queued", name);
      await page.locator(".composer").getByRole("button", { name: "Leave queue" }).click();
    });
  });
}
