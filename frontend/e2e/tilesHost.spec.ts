import { expect, test, type Page } from "@playwright/test";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer as netServer, type AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ViteDevServer } from "vite";
import { ask, lastAnswer } from "./fakeStack";
import { FakeGateway } from "./fakeGateway";

/**
 * Tiles behind any host: the app at http://127.0.0.1:<port> and at http://localhost:<port>, with
 * tiles from a real raster-tools process (the demo catalog) behind Vite's proxy, which passes the
 * browser's Host on as the ingress does. The land mask and a layer the agent adds must load from the
 * page's own origin with no console error (a fixed `http://localhost:8080` in TileJSON broke every
 * other host with CORS errors). The stand-in gateway answers /api; no `make up` needed.
 */

const FRONTEND = join(dirname(fileURLToPath(import.meta.url)), "..");
const REPO = join(FRONTEND, "..");
const PYTHON = join(REPO, ".venv", "bin", "python");
const CATALOG = join(REPO, ".local", "data", "stac", "catalog.json");
const DEM_BOUNDS = [5.741667, 49.441667, 6.533333, 50.191667];

async function freePort(): Promise<number> {
  const server = netServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const gateway = new FakeGateway();
let raster: ChildProcess | null = null;
let rasterLog = "";
let vite: ViteDevServer | null = null;
let port = 0;

test.beforeAll(async () => {
  test.setTimeout(600_000);
  if (!existsSync(CATALOG)) {
    // The same builder the raster-tools suite and `make up` use (offline, from packaged data).
    const built = spawnSync(PYTHON, ["-m", "stacgis_raster.demo_data", "--cache", ".local/cache", "--out", ".local/data"], {
      cwd: REPO,
      encoding: "utf8",
    });
    expect(built.status, `demo data build failed:\n${built.stdout}\n${built.stderr}`).toBe(0);
  }
  const rasterPort = await freePort();
  raster = spawn(PYTHON, ["-m", "stacgis_raster"], {
    cwd: REPO,
    env: {
      ...process.env,
      STACGIS_ALLOW_DEV_SECRETS: "1",
      // Derived per request, whatever the calling shell holds.
      RASTER_PUBLIC_BASE_URL: "",
      RASTER_HOST: "127.0.0.1",
      RASTER_PORT: String(rasterPort),
      RASTER_STAC_URL: CATALOG,
      RASTER_IO_WORKERS: "2",
      RASTER_LOG_LEVEL: "WARNING",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  raster.stdout?.on("data", (d: Buffer) => (rasterLog += d.toString()));
  raster.stderr?.on("data", (d: Buffer) => (rasterLog += d.toString()));
  const rasterUrl = `http://127.0.0.1:${rasterPort}`;
  await expect
    .poll(
      async () => {
        expect(raster?.exitCode, `raster-tools exited:\n${rasterLog}`).toBeNull();
        return fetch(`${rasterUrl}/readyz`).then((r) => r.status, () => 0);
      },
      { timeout: 120_000, intervals: [250] },
    )
    .toBe(200);

  process.env.STACGIS_API_URL = await gateway.start();
  process.env.STACGIS_TILES_URL = rasterUrl;
  const { createServer } = await import("vite");
  port = await freePort();
  vite = await createServer({
    root: FRONTEND,
    configFile: join(FRONTEND, "vite.config.ts"),
    logLevel: "error",
    server: { host: "127.0.0.1", port, strictPort: true, hmr: false },
  });
  await vite.listen();
});

test.afterAll(async () => {
  await vite?.close();
  await gateway.stop();
  raster?.kill("SIGTERM");
  delete process.env.STACGIS_API_URL;
  delete process.env.STACGIS_TILES_URL;
});

interface Seen {
  tiles: { url: string; status: number }[];
  failed: string[];
  errors: string[];
}

function watch(page: Page): Seen {
  const seen: Seen = { tiles: [], failed: [], errors: [] };
  page.on("response", (resp) => {
    if (/\/tiles\/[^/]+\/\d+\/\d+\/\d+\.png/.test(resp.url())) seen.tiles.push({ url: resp.url(), status: resp.status() });
  });
  page.on("requestfailed", (req) => seen.failed.push(`${req.url()}: ${req.failure()?.errorText ?? "failed"}`));
  page.on("console", (msg) => {
    if (msg.type() === "error") seen.errors.push(msg.text());
  });
  page.on("pageerror", (err) => seen.errors.push(err.message));
  return seen;
}

const loaded = (seen: Seen, collection: string, origin: string) =>
  seen.tiles.filter((t) => t.status === 200 && t.url.startsWith(`${origin}/tiles/${collection}/`)).length;

for (const host of ["127.0.0.1", "localhost"]) {
  test(`at http://${host} the land mask and an added layer load their tiles from that host`, async ({ page }) => {
    const origin = `http://${host}:${port}`;
    gateway.answers.push({
      content: "The elevation model of Luxembourg is on the map.",
      steps: [{ frontend: { name: "visualize_collection", arguments: { collection_id: "luxembourg-dem" } } }],
    });
    const seen = watch(page);
    await page.goto(`${origin}/`);
    await expect(page.getByTestId("model")).toContainText("fake-model", { timeout: 60_000 });
    await page.waitForFunction(() => Boolean(window.__stacgisMap?.loaded()), undefined, { timeout: 60_000 });

    // The offline basemap's land mask: raster-tools' TileJSON, fetched by MapLibre itself.
    await page.evaluate(() => window.__stacgisMap!.jumpTo({ center: [6.1, 49.8], zoom: 5 }));
    await expect.poll(() => loaded(seen, "global-land-mask", origin), { timeout: 60_000 }).toBeGreaterThan(0);

    // A layer the agent adds: the app fetches its TileJSON and hands MapLibre the tile URLs in it.
    await ask(page, "Show the Luxembourg elevation model");
    await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
    await page.waitForFunction(() => Boolean(window.__stacgisMap?.getLayer("raster:luxembourg-dem")));
    await expect.poll(() => loaded(seen, "luxembourg-dem", origin), { timeout: 60_000 }).toBeGreaterThan(0);
    await page.waitForFunction(() => window.__stacgisMap!.isSourceLoaded("raster:luxembourg-dem"), undefined, {
      timeout: 60_000,
    });
    const centre = [(DEM_BOUNDS[0] + DEM_BOUNDS[2]) / 2, (DEM_BOUNDS[1] + DEM_BOUNDS[3]) / 2];
    expect(await page.evaluate(() => window.__stacgisMap!.getCenter().toArray())).toEqual([
      expect.closeTo(centre[0], 0),
      expect.closeTo(centre[1], 0),
    ]);

    const elsewhere = seen.tiles.filter((t) => !t.url.startsWith(`${origin}/`));
    expect(elsewhere, "tiles requested from another origin").toEqual([]);
    expect(seen.tiles.filter((t) => t.status !== 200), "tiles that failed").toEqual([]);
    // ERR_ABORTED: MapLibre cancels the tiles of a view it leaves (the fit to the layer); not a failure.
    const failed = seen.failed.filter((f) => f.includes("/tiles/") && !f.endsWith("net::ERR_ABORTED"));
    expect(failed, "tile requests that failed").toEqual([]);
    expect(seen.errors, "console errors").toEqual([]);
  });
}
