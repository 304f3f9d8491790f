import { defineConfig } from "@playwright/test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Browser tests against the whole product (`make up`): gateway, orchestrator,
 * tool servers and the scripted model server. Debian's chromium is used; no
 * browser is downloaded.
 */
const baseURL = process.env.E2E_BASE_URL ?? "http://localhost:8080";

// Specs served by Vite against the stand-in gateway (e2e/fakeStack.ts) need no running stack, so
// `make test` runs them beside the service suites (project "stand-in"); the rest need `make up` ("stack").
const e2e = join(dirname(fileURLToPath(import.meta.url)), "e2e");
const standIn = readdirSync(e2e).filter(
  (name) => name.endsWith(".spec.ts") && readFileSync(join(e2e, name), "utf8").includes("serveWithFakeGateway()"),
);

export default defineConfig({
  testDir: "e2e",
  outputDir: "test-results",
  // The scripted model's rules are global: tests run one at a time.
  workers: 1,
  fullyParallel: false,
  timeout: 90_000,
  expect: { timeout: 20_000 },
  retries: 0,
  reporter: [["list"]],
  projects: [
    { name: "stand-in", testMatch: standIn },
    { name: "stack", testIgnore: standIn },
  ],
  use: {
    baseURL,
    viewport: { width: 1400, height: 900 },
    trace: "retain-on-failure",
    screenshot: "only-on-failure",
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-quic",
        "--use-angle=swiftshader",
        "--enable-unsafe-swiftshader",
      ],
    },
  },
});
