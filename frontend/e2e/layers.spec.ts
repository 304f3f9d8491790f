import { expect, test, type Page } from "@playwright/test";
import { seriousViolations } from "./axe";
import { DESKTOP, PHONE, ask, lastAnswer, openApp, serveWithFakeGateway, shot } from "./fakeStack";

/**
 * The layers panel: every layer on the map (the agent's, the user's, the basemap) with
 * visibility, opacity, order, removal and a legend with values and units; and a collection
 * added from the catalog by hand. Served with Vite against the stand-in gateway.
 */

const stack = serveWithFakeGateway();
const { gateway } = stack;

const VIEWPORTS = [
  { name: "desktop", size: DESKTOP },
  { name: "phone", size: PHONE },
];

const DEM = "Digital elevation model of Luxembourg";
const NLCD = "NLCD land cover of Puerto Rico";

/** The map's style layer ids, bottom to top. */
function styleLayers(page: Page): Promise<string[]> {
  return page.evaluate(() => window.__stacgisMap!.getStyle().layers.map((l) => l.id));
}

function layout(page: Page, id: string): Promise<unknown> {
  return page.evaluate((id) => window.__stacgisMap!.getLayoutProperty(id, "visibility"), id);
}

function paint(page: Page, id: string, prop: string): Promise<unknown> {
  return page.evaluate(([id, prop]) => window.__stacgisMap!.getPaintProperty(id, prop as "raster-opacity"), [id, prop]);
}

async function openLayers(page: Page) {
  await page.getByRole("button", { name: "Layers", exact: true }).click();
  const panel = page.getByRole("region", { name: "Layers" });
  await expect(panel).toBeVisible();
  return panel;
}

test.beforeEach(() => {
  gateway.layers.set("luxembourg-dem", { name: "luxembourg-dem", description: DEM, bounds: [5.73, 49.45, 6.53, 50.18] });
  gateway.layers.set("nlcd-puerto-rico", { name: "nlcd-puerto-rico", description: NLCD, bounds: [-67.3, 17.9, -65.2, 18.6] });
});

for (const { name, size } of VIEWPORTS) {
  test.describe(`at ${name} size`, () => {
    test.use({ viewport: size });

    test("every layer with visibility, opacity, order, removal and a legend with values and units", async ({ page }) => {
      const demInfo = {
        id: "luxembourg-dem",
        title: DEM,
        kind: "continuous",
        bands: [{ band: 1, name: "elevation", unit: "m" }],
        render_defaults: { rescale: [[200, 503]], colormap_name: "terrain" },
      };
      const nlcdInfo = {
        id: "nlcd-puerto-rico",
        title: NLCD,
        kind: "categorical",
        bands: [{ band: 1, name: "land_cover", unit: null, classes: { "11": "Open water", "42": "Evergreen forest" } }],
        render_defaults: { colormap: { "11": [70, 107, 159, 255], "42": [28, 95, 44, 255] } },
      };
      gateway.answers.push({
        content: "Both layers are on the map.",
        steps: [
          { tool: { name: "get_raster_info", arguments: { collection_id: "nlcd-puerto-rico" }, result: JSON.stringify(nlcdInfo) } },
          { tool: { name: "get_raster_info", arguments: { collection_id: "luxembourg-dem" }, result: JSON.stringify(demInfo) } },
          { frontend: { name: "visualize_collection", arguments: { collection_id: "nlcd-puerto-rico" } } },
          { frontend: { name: "visualize_collection", arguments: { collection_id: "luxembourg-dem" } } },
        ],
      });
      await openApp(page, stack.url());
      await ask(page, "Show the Luxembourg DEM over the Puerto Rico land cover");
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
      await page.waitForFunction(() => Boolean(window.__stacgisMap!.getLayer("raster:luxembourg-dem")));

      const panel = await openLayers(page);
      // Top first: the last layer added, then the first, then the basemap.
      await expect(panel.locator("li.layer-item")).toHaveCount(3);
      await expect(panel.locator("li.layer-item").nth(0)).toHaveAttribute("data-layer", "raster:luxembourg-dem");
      await expect(panel.locator("li.layer-item").nth(1)).toHaveAttribute("data-layer", "raster:nlcd-puerto-rico");
      await expect(panel.locator("li.layer-item").nth(2)).toContainText("Basemap: Light outlines");
      const dem = panel.locator("[data-layer='raster:luxembourg-dem']");
      const nlcd = panel.locator("[data-layer='raster:nlcd-puerto-rico']");
      await expect(dem).toContainText("added by the assistant");
      // Values with their unit from the collection's metadata; classes with their names and colours.
      await expect(dem.getByTestId("legend-scale")).toHaveText(/^200 m\s*503 m$/);
      await expect(nlcd.getByRole("list", { name: `Classes of ${NLCD}` }).locator("li")).toHaveText(["Open water (11)", "Evergreen forest (42)"]);
      expect(await nlcd.locator(".legend-swatch").first().evaluate((el) => getComputedStyle(el).backgroundColor)).toBe("rgb(70, 107, 159)");
      expect(await seriousViolations(page)).toEqual([]);
      await shot(page, `layers-panel-${name}`);

      // Visibility.
      await dem.getByRole("checkbox", { name: DEM }).uncheck();
      await expect.poll(() => layout(page, "raster:luxembourg-dem")).toBe("none");
      await dem.getByRole("checkbox", { name: DEM }).check();
      await expect.poll(() => layout(page, "raster:luxembourg-dem")).toBe("visible");

      // Opacity.
      await dem.getByRole("slider", { name: `Opacity of ${DEM}` }).fill("40");
      await expect(dem.locator("output")).toHaveText("40 %");
      await expect.poll(() => paint(page, "raster:luxembourg-dem", "raster-opacity")).toBe(0.4);

      // Order: the DEM goes below the land cover, in the panel and on the map.
      await dem.getByRole("button", { name: `Move ${DEM} down` }).click();
      await expect(panel.locator("li.layer-item").nth(0)).toHaveAttribute("data-layer", "raster:nlcd-puerto-rico");
      await expect
        .poll(async () => {
          const ids = await styleLayers(page);
          return ids.indexOf("raster:nlcd-puerto-rico") > ids.indexOf("raster:luxembourg-dem");
        })
        .toBe(true);
      // Both stay beneath the borders and the selection.
      const ids = await styleLayers(page);
      expect(ids.indexOf("raster:nlcd-puerto-rico")).toBeLessThan(ids.indexOf("countries-line"));

      // The basemap: hidden, shown, half transparent.
      const basemap = panel.locator("[data-layer=basemap]");
      await basemap.getByRole("checkbox").uncheck();
      await expect.poll(() => layout(page, "countries-fill")).toBe("none");
      await basemap.getByRole("checkbox").check();
      await expect.poll(() => layout(page, "countries-fill")).toBe("visible");
      await basemap.getByRole("slider", { name: "Opacity of the basemap" }).fill("50");
      await expect.poll(() => paint(page, "countries-fill", "fill-opacity")).toBe(0.5);

      // Remove.
      await nlcd.getByRole("button", { name: `Remove ${NLCD}` }).click();
      await expect(panel.locator("[data-layer='raster:nlcd-puerto-rico']")).toHaveCount(0);
      await expect.poll(async () => (await styleLayers(page)).includes("raster:nlcd-puerto-rico")).toBe(false);
      await shot(page, `layers-panel-changed-${name}`);
    });

    test("a collection from the catalog is added by hand", async ({ page }) => {
      gateway.layers.set("luxembourg-dem", {
        name: "luxembourg-dem",
        description: DEM,
        bounds: [5.73, 49.45, 6.53, 50.18],
        units: "m",
        rescale: "200,503",
        colormap_name: "viridis",
      });
      const listing = {
        count: 2,
        collections: [
          { id: "luxembourg-dem", title: DEM, units: ["m"], kind: "continuous" },
          { id: "nlcd-puerto-rico", title: NLCD, units: [], kind: "categorical" },
        ],
      };
      gateway.answers.push({
        content: "There are two collections.",
        tools: [{ name: "list_raster_collections", arguments: {}, result: JSON.stringify(listing) }],
      });
      await openApp(page, stack.url());
      await ask(page, "Which raster collections are there?");
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");

      const panel = await openLayers(page);
      const form = panel.getByRole("form", { name: "Add a collection" });
      // The collections the conversation named are offered.
      await expect(form.getByTestId("known-collections")).toContainText("luxembourg-dem, nlcd-puerto-rico");
      const input = form.getByRole("combobox", { name: "Add a collection from the catalog" });

      await input.fill("no-such-collection");
      await form.getByRole("button", { name: "Add" }).click();
      await expect(form.getByRole("alert")).toContainText("No tiles for no-such-collection: HTTP 404");

      await input.fill("luxembourg-dem");
      await form.getByRole("button", { name: "Add" }).click();
      await expect(form.getByRole("status")).toHaveText(`Showing ${DEM} on the map`);
      const dem = panel.locator("[data-layer='raster:luxembourg-dem']");
      await expect(dem).toContainText("added by you");
      // The TileJSON's range and unit label the scale.
      await expect(dem.getByTestId("legend-scale")).toHaveText(/^200 m\s*503 m$/);
      await page.waitForFunction(() => Boolean(window.__stacgisMap!.getLayer("raster:luxembourg-dem")));
      expect(await seriousViolations(page)).toEqual([]);
      await shot(page, `layers-added-by-hand-${name}`);

      // Closed, the panel leaves the legend.
      await page.getByRole("button", { name: "Layers", exact: true }).click();
      await expect(page.getByRole("region", { name: "Map legend" }).locator("[data-collection=luxembourg-dem]")).toBeVisible();
    });
  });
}
