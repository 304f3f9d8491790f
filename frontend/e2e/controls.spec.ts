import AxeBuilder from "@axe-core/playwright";
import { expect, test, type Locator, type Page } from "@playwright/test";
import { DESKTOP, PHONE, ask, contrast, lastAnswer, openApp, shot, serveWithFakeGateway } from "./fakeStack";

/**
 * The chat's controls as a user meets them: red buttons on hover, the approval
 * dialog, stopping a run, typing while it runs, a new conversation. Served with
 * Vite against the stand-in gateway (see ./fakeStack.ts).
 */

const stack = serveWithFakeGateway();
const { gateway } = stack;

const VIEWPORTS = [
  { name: "desktop", size: DESKTOP },
  { name: "phone", size: PHONE },
];

async function seriousViolations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]).analyze();
  return results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.help} -> ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

/** The text and background colours of a button while the pointer is on it, and their contrast. */
async function hovered(button: Locator): Promise<{ color: string; background: string; ratio: number }> {
  await button.hover();
  // The pointer is on it: the :hover rules apply (checked, so a missed hover cannot pass as readable).
  expect(await button.evaluate((el) => el.matches(":hover"))).toBe(true);
  const { color, background } = await button.evaluate((el) => {
    const style = getComputedStyle(el);
    return { color: style.color, background: style.backgroundColor };
  });
  return { color, background, ratio: contrast(color, background) };
}

/** Red stays red and readable: white text at AA contrast (4.5:1) on a dark red. */
async function expectReadableDanger(button: Locator): Promise<void> {
  const look = await hovered(button);
  expect(look.color, "text colour on hover").toBe("rgb(255, 255, 255)");
  expect(look.ratio, `contrast of ${look.color} on ${look.background}`).toBeGreaterThanOrEqual(4.5);
  const [r, g, b] = (look.background.match(/\d+/g) ?? []).map(Number);
  expect(r > g && r > b, `hover background ${look.background} is still a red`).toBe(true);
}

for (const { name, size } of VIEWPORTS) {
  test.describe(`at ${name} size`, () => {
    test.use({ viewport: size });

    test("Stop and Leave queue stay readable on hover, the stop banner says it once", async ({ page }) => {
      gateway.answers.push({ content: "Never shown.", steps: [{ text: "Looking at the DEM" }, { hold: true }] });
      await openApp(page, stack.url());
      await ask(page, "Describe the elevation of Luxembourg");
      const stop = page.getByRole("button", { name: "Stop", exact: true });
      await expect(lastAnswer(page).getByTestId("answer")).toHaveText("Looking at the DEM");
      await expectReadableDanger(stop);
      await shot(page, `controls-stop-hover-${name}`);
      await stop.click();
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "cancelled");
      const banner = page.locator(".status-banner");
      await expect(banner.locator(".status-text")).toHaveText("Stopped: The answer was cancelled before it finished.");

      // Every slot busy: the message waits in the queue; its Leave queue button is the same red.
      gateway.busy = true;
      gateway.answers.push({ content: "Not reached." });
      await ask(page, "And the slope?");
      const leave = page.locator(".composer").getByRole("button", { name: "Leave queue" });
      await expect(leave).toBeVisible();
      await expectReadableDanger(leave);
      await leave.click();
      await expect(page.locator(".status-banner .status-text")).toHaveText("Note: You left the queue.");
      await expect(page.getByRole("textbox", { name: "Message" })).toHaveValue("And the slope?");
      gateway.busy = false;
    });

    test("the delete confirmation's red button stays readable on hover", async ({ page }) => {
      gateway.answers.push({ content: "Luxembourg has 12 cantons." });
      await openApp(page, stack.url());
      await ask(page, "How many cantons has Luxembourg?");
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
      const sidebar = page.getByRole("navigation", { name: "Conversations" });
      if (!(await sidebar.isVisible())) await page.getByRole("button", { name: "Conversations" }).click();
      const item = sidebar.locator("li.session-item", { hasText: "How many cantons" }).first();
      await item.getByRole("button", { name: /^Delete/ }).click();
      const confirm = item.getByRole("group", { name: /Delete .*\?/ }).getByRole("button", { name: "Delete" });
      await expectReadableDanger(confirm);
      await shot(page, `controls-delete-hover-${name}`);
    });

    test("the approval dialog starts on Approve, wraps long arguments and renders the description", async ({ page }) => {
      const longText = `Kneiff is the highest point of Luxembourg at 560 m; ${"its summit lies in a field near Troisvierges. ".repeat(4)}`;
      const url = `https://example.org/${"very-long-path-segment-".repeat(8)}end`;
      gateway.answers.push({
        content: "Saved the note about Kneiff.",
        steps: [
          {
            approval: {
              name: "add_knowledge",
              arguments: { title: "Kneiff", content: longText, source: url },
              result: '{"id": "k-1"}',
              server: "knowledge-tools",
              description: "Adds a note to the **knowledge base**. Use `search_knowledge` first to avoid duplicates.",
            },
          },
        ],
      });
      await openApp(page, stack.url());
      const badge = page.getByTestId("model");
      const label = await badge.textContent();
      expect(label).toBe("Model: fake-model (test)");
      await ask(page, "Remember that Kneiff is the highest point");

      const dialog = page.getByRole("dialog", { name: "Allow this action?" });
      await expect(dialog).toBeVisible();
      // The model badge keeps its text while the run goes on.
      await expect(badge).toHaveText(label!);
      const approve = dialog.getByRole("button", { name: "Approve" });
      await expect(approve).toBeFocused();

      // Markdown, not raw backticks and asterisks.
      const description = dialog.getByTestId("approval-description");
      await expect(description.locator("strong")).toHaveText("knowledge base");
      await expect(description.locator("code")).toHaveText("search_knowledge");
      await expect(description).not.toContainText("`");
      await expect(description).not.toContainText("**");

      // Every argument is readable without scrolling sideways.
      const args = dialog.getByTestId("approval-args");
      await expect(args).toContainText("very-long-path-segment-very-long-path-segment");
      const box = await args.evaluate((el) => ({ scroll: el.scrollWidth, client: el.clientWidth }));
      expect(box.scroll, "the arguments box scrolls sideways").toBeLessThanOrEqual(box.client);
      expect((await dialog.boundingBox())!.width).toBeLessThanOrEqual(size.width);

      await expectReadableDanger(dialog.getByRole("button", { name: "Reject" }));
      await approve.focus();
      expect(await seriousViolations(page)).toEqual([]);
      await shot(page, `approval-dialog-${name}`);

      // Enter answers with the focused default: Approve.
      await page.keyboard.press("Enter");
      await expect(dialog).toBeHidden();
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
      await expect(lastAnswer(page).getByTestId("answer")).toHaveText("Saved the note about Kneiff.");
      expect([...gateway.approvals.values()].at(-1)).toBe(true);
      await expect(badge).toHaveText(label!);
    });

    test("Enter during a run says why nothing was sent; a finished stream logs no error", async ({ page }) => {
      const problems: string[] = [];
      page.on("console", (msg) => {
        if (msg.type() === "error") problems.push(`${msg.text()} (${msg.location().url})`);
      });
      page.on("requestfailed", (req) => problems.push(`request failed: ${req.url()} ${req.failure()?.errorText}`));
      gateway.answers.push(
        { content: " and it is 560 m high.", steps: [{ text: "Kneiff is the highest point" }, { hold: true }] },
        { content: "Buurgplaatz is 559 m high." },
      );
      await openApp(page, stack.url());
      await ask(page, "What is the highest point of Luxembourg?");
      await expect(lastAnswer(page).getByTestId("answer")).toHaveText("Kneiff is the highest point");

      const input = page.getByRole("textbox", { name: "Message" });
      await input.fill("And the second highest?");
      await input.press("Enter");
      const hint = page.getByTestId("held-hint");
      await expect(hint).toBeVisible();
      await expect(hint).toContainText("Not sent yet: the assistant is still answering.");
      await expect(input).toHaveValue("And the second highest?");
      expect(gateway.requests.map((r) => r.message)).toEqual(["What is the highest point of Luxembourg?"]);
      await shot(page, `composer-held-${name}`);

      gateway.release();
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
      await expect(hint).toBeHidden();
      // The session list is refreshed once the run is over: by then the stream has been let go.
      const refreshed = page.waitForResponse((r) => r.url().endsWith("/api/v1/chat/sessions"));
      await input.press("Enter");
      await expect(page.locator("article.message-user .message-text")).toHaveText([
        "What is the highest point of Luxembourg?",
        "And the second highest?",
      ]);
      await expect(lastAnswer(page).getByTestId("answer")).toHaveText("Buurgplaatz is 559 m high.");
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
      await refreshed;
      expect(problems).toEqual([]);
    });

    test("a new conversation starts with no selection", async ({ page }) => {
      gateway.answers.push({ content: "The area is mostly forest." }, { content: "Hello." });
      await openApp(page, stack.url());
      const map = page.getByTestId("map");
      const box = (await map.boundingBox())!;
      // Draw a triangle near the top of the map (clear of the chat sheet on a phone).
      await page.getByRole("button", { name: "Draw area" }).click();
      for (const [fx, fy] of [
        [0.3, 0.12],
        [0.6, 0.12],
        [0.45, 0.25],
      ]) {
        await page.mouse.click(box.x + box.width * fx, box.y + box.height * fy);
      }
      await page.getByRole("button", { name: "Finish area" }).click();
      await expect(page.getByTestId("context-area")).toHaveText(/Drawn area \(3 corners\)/);
      await ask(page, "What covers the drawn area?");
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
      expect(gateway.requests.at(-1)?.spatial_context?.drawn_geometry).toMatchObject({ type: "Polygon" });

      const sidebar = page.getByRole("navigation", { name: "Conversations" });
      if (!(await sidebar.isVisible())) await page.getByRole("button", { name: "Conversations" }).click();
      await sidebar.getByRole("button", { name: "+ New conversation" }).click();
      if (name === "phone") await page.getByRole("button", { name: "Chat" }).click();
      await expect(page.locator("article.message")).toHaveCount(0);
      await expect(page.getByTestId("context-area")).toHaveCount(0);
      await expect(page.getByTestId("context-feature")).toHaveCount(0);
      await expect(page.getByRole("button", { name: "Clear area" })).toHaveCount(0);
      await ask(page, "Hello");
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
      const sent = gateway.requests.at(-1)?.spatial_context;
      expect(sent?.drawn_geometry ?? null).toBeNull();
      expect(sent?.selected_feature ?? null).toBeNull();
    });
  });
}
