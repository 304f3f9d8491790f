import { expect, type APIRequestContext, type Locator, type Page } from "@playwright/test";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The scripted model server of `make up` (speaks the Ollama wire protocol; rules set per test). */
export const MODEL_SERVER_URL = process.env.MODEL_SERVER_URL ?? "http://127.0.0.1:11434";

/** A tool the stack is configured to gate behind the user's approval, and arguments it accepts. */
export const APPROVAL_TOOL = process.env.E2E_APPROVAL_TOOL ?? "add_knowledge";
export function approvalArguments(token: string): Record<string, unknown> {
  const given = process.env.E2E_APPROVAL_ARGS;
  if (given) return JSON.parse(given.replaceAll("{token}", token)) as Record<string, unknown>;
  // knowledge-tools' add_knowledge: title, content, source.
  return { title: `Kneiff ${token}`, content: "Kneiff is the highest point of Luxembourg (560 m).", source: "browser test" };
}

const SCREENSHOTS = join(dirname(fileURLToPath(import.meta.url)), "screenshots");

export interface ScriptedRule {
  name: string;
  match: Record<string, unknown>;
  thinking?: string;
  content?: string;
  tool_calls?: { name: string; arguments: Record<string, unknown> }[];
  chunk_chars?: number;
  delay_ms?: number;
  error?: { status: number; message: string; after_chunks?: number };
  times?: number;
}

let counter = 0;

/** A word no other test's rules match, so rules of different tests never collide. */
export function uniqueToken(prefix: string): string {
  counter += 1;
  return `${prefix}${Date.now().toString(36)}${counter}`;
}

/** Puts rules in front of the scripted model's rule list. */
export async function addRules(request: APIRequestContext, rules: ScriptedRule[]): Promise<void> {
  const resp = await request.post(`${MODEL_SERVER_URL}/_scripted/rules`, { data: { rules, position: "prepend" } });
  expect(resp.ok(), `scripted rules rejected: ${await resp.text()}`).toBe(true);
}

export async function resetRules(request: APIRequestContext): Promise<void> {
  await request.delete(`${MODEL_SERVER_URL}/_scripted/rules`);
}

/** Rules for "call this tool first, then answer with this text" on a message containing `token`. */
export function toolThenAnswer(
  token: string,
  tool: { name: string; arguments: Record<string, unknown> },
  answer: string,
  extra: Partial<ScriptedRule> = {},
): ScriptedRule[] {
  return [
    { name: `${token}-call`, match: { last_user: token, step: 0 }, tool_calls: [tool], ...extra },
    { name: `${token}-answer`, match: { last_user: token, step: 1 }, content: answer, chunk_chars: 6, delay_ms: 10 },
  ];
}

export async function openApp(page: Page): Promise<void> {
  await page.addInitScript(() => {
    if (window.__cspViolations) return;
    window.__cspViolations = [];
    document.addEventListener("securitypolicyviolation", (e) => {
      window.__cspViolations!.push(`${e.effectiveDirective} blocked ${e.blockedURI || "inline"} (${e.sourceFile}:${e.lineNumber})`);
    });
  });
  await page.goto("/");
  await page.waitForFunction(() => Boolean(window.__stacgisMap?.loaded()));
  await expect(page.getByTestId("model")).not.toHaveText("Model: …");
}

export async function send(page: Page, text: string): Promise<void> {
  const input = page.getByRole("textbox", { name: "Message" });
  await input.fill(text);
  await input.press("Enter");
}

export function lastAnswer(page: Page): Locator {
  return page.locator("article.message-assistant").last();
}

export async function waitForAnswer(page: Page, status = "complete"): Promise<Locator> {
  const answer = lastAnswer(page);
  await expect(answer).toHaveAttribute("data-status", status, { timeout: 60_000 });
  // Every answered turn ran within the page's Content-Security-Policy.
  expect(await cspViolations(page), "Content-Security-Policy violations").toEqual([]);
  return answer;
}

/** What the page's Content-Security-Policy refused since openApp (the ingress sends the policy). */
export async function cspViolations(page: Page): Promise<string[]> {
  return page.evaluate(() => window.__cspViolations ?? []);
}

export async function mapCenter(page: Page): Promise<{ lng: number; lat: number; zoom: number }> {
  return page.evaluate(() => {
    const map = window.__stacgisMap!;
    const c = map.getCenter();
    return { lng: c.lng, lat: c.lat, zoom: map.getZoom() };
  });
}

/** Saves a picture of the page once the map has drawn its tiles (or after 5 s). */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page
    .waitForFunction(() => window.__stacgisMap?.areTilesLoaded() && !window.__stacgisMap.isMoving(), undefined, {
      timeout: 5000,
    })
    .catch(() => undefined);
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`) });
}
