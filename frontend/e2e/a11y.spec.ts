import AxeBuilder from "@axe-core/playwright";
import { expect, test, type Page } from "@playwright/test";
import { addRules, openApp, resetRules, screenshot, send, toolThenAnswer, uniqueToken, waitForAnswer } from "./support";

test.afterAll(async ({ request }) => {
  await resetRules(request);
});

async function seriousViolations(page: Page) {
  const results = await new AxeBuilder({ page }).withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]).analyze();
  return results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.help} -> ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

test("the app has no serious accessibility violations", async ({ page, request }) => {
  const token = uniqueToken("a11y");
  const chart = { chart_type: "line", title: "Values", labels: ["a", "b", "c"], datasets: [{ label: "v", data: [1, 3, 2] }] };
  await addRules(
    request,
    toolThenAnswer(token, { name: "generate_chart", arguments: chart }, "**Done.** See [the docs](https://example.org)."),
  );
  await openApp(page);
  expect(await seriousViolations(page)).toEqual([]);

  await send(page, `Draw a line chart ${token}`);
  await waitForAnswer(page);
  expect(await seriousViolations(page)).toEqual([]);
});

test("keyboard alone can ask a question", async ({ page, request }) => {
  const token = uniqueToken("keys");
  await addRules(request, [{ name: token, match: { last_user: token }, content: "Answered from the keyboard.", delay_ms: 1 }]);
  await openApp(page);
  // Tab until the message box has focus.
  for (let i = 0; i < 40; i++) {
    await page.keyboard.press("Tab");
    if (await page.evaluate(() => document.activeElement?.id === "composer-input")) break;
  }
  expect(await page.evaluate(() => document.activeElement?.id)).toBe("composer-input");
  await page.keyboard.type(`Hello from the keyboard ${token}`);
  await page.keyboard.press("Enter");
  await expect((await waitForAnswer(page)).getByTestId("answer")).toHaveText("Answered from the keyboard.");
});

test("a narrow window shows the map with the chat over it", async ({ browser, request }) => {
  const token = uniqueToken("narrow");
  await addRules(request, [{ name: token, match: { last_user: token }, content: "Fits on a phone.", delay_ms: 1 }]);
  const page = await (await browser.newContext({ viewport: { width: 390, height: 800 } })).newPage();
  await openApp(page);
  await send(page, `Small screen ${token}`);
  await waitForAnswer(page);
  const chat = page.locator("#chat-panel");
  const map = page.getByTestId("map");
  await expect(chat).toBeVisible();
  await expect(map).toBeVisible();
  const chatBox = (await chat.boundingBox())!;
  expect(chatBox.width).toBeLessThanOrEqual(390);
  // Nothing overflows sideways.
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await page.getByRole("button", { name: "Conversations" }).click();
  await expect(page.getByRole("navigation", { name: "Conversations" })).toBeVisible();
  await expect(chat).toBeHidden();
  await screenshot(page, "narrow-sessions");
  await page.getByRole("button", { name: "Chat" }).click();
  await expect(chat).toBeVisible();
  await screenshot(page, "narrow-chat");
  expect(await seriousViolations(page)).toEqual([]);
});
