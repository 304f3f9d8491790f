import { expect, test, type Page } from "@playwright/test";
import { seriousViolations } from "./axe";
import { DESKTOP, PHONE, ask, lastAnswer, openApp, serveWithFakeGateway, shot } from "./fakeStack";

/**
 * A run outlives its page: after a reload the app follows the run still going on from its
 * first event (GET /chat/runs/{id}/events), a pending approval included. Served with Vite
 * against the stand-in gateway, which keeps a run going when its page goes away.
 */

const stack = serveWithFakeGateway();
const { gateway } = stack;

const VIEWPORTS = [
  { name: "desktop", size: DESKTOP },
  { name: "phone", size: PHONE },
];

async function reload(page: Page): Promise<void> {
  await page.reload();
  await expect(page.getByTestId("model")).toContainText("fake-model", { timeout: 60_000 });
  await page.waitForFunction(() => Boolean(window.__stacgisMap?.loaded()), undefined, { timeout: 60_000 });
}

for (const { name, size } of VIEWPORTS) {
  test.describe(`at ${name} size`, () => {
    test.use({ viewport: size });

    test("a reload during an approval asks again, and the approved run finishes", async ({ page }) => {
      const question = `Remember that Kneiff is the highest point (${name})`;
      gateway.answers.push({
        content: "Saved the note.",
        steps: [
          { text: "Checking the note. " },
          { approval: { name: "add_knowledge", arguments: { title: "Kneiff" }, result: '{"id": "k-1"}', server: "knowledge-tools" } },
        ],
      });
      await openApp(page, stack.url());
      await ask(page, question);
      const dialog = page.getByRole("dialog", { name: "Allow this action?" });
      await expect(dialog).toBeVisible();

      await reload(page);
      await expect(dialog).toBeVisible();
      await expect(dialog).toContainText("add_knowledge");
      await expect(page.locator("article.message-user .message-text")).toHaveText([question]);
      await expect(lastAnswer(page).getByTestId("answer")).toHaveText("Checking the note.");
      await expect(page.getByTestId("run-status-composer").locator(".run-status-label")).toHaveText(
        "Waiting for your approval of add_knowledge",
      );
      expect(await seriousViolations(page)).toEqual([]);
      await shot(page, `reload-approval-${name}`);

      await dialog.getByRole("button", { name: "Approve" }).click();
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
      await expect(lastAnswer(page).getByTestId("answer")).toHaveText("Checking the note. Saved the note.");
      expect([...gateway.approvals.values()].at(-1)).toBe(true);
      // Over: another reload shows the conversation from its history, with nothing to follow.
      await reload(page);
      await expect(lastAnswer(page).getByTestId("answer")).toHaveText("Checking the note. Saved the note.");
      await expect(page.locator("article.message-user .message-text")).toHaveText([question]);
      await expect(dialog).toBeHidden();
      await expect(page.getByTestId("run-status-composer")).toHaveCount(0);
    });

    test("a call rejected at approval still reads as rejected after a reload", async ({ page }) => {
      gateway.answers.push({
        content: "I did not save the note.",
        steps: [{ approval: { name: "add_knowledge", arguments: { title: "Kneiff" }, result: '{"id": "k-2"}', server: "knowledge-tools" } }],
      });
      await openApp(page, stack.url());
      await ask(page, `Remember Kneiff, or not (${name})`);
      const dialog = page.getByRole("dialog", { name: "Allow this action?" });
      await dialog.getByRole("button", { name: "Reject" }).click();
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");

      await reload(page);
      await expect(lastAnswer(page).getByTestId("answer")).toHaveText("I did not save the note.");
      const activity = lastAnswer(page).locator(".activity-list");
      await expect(activity.locator(".activity-approval.rejected")).toHaveText("You rejected add_knowledge");
      await expect(activity).not.toContainText("✓");
      await expect(activity).not.toContainText("called");
      expect(await seriousViolations(page)).toEqual([]);
      await shot(page, `reload-rejected-${name}`);
    });

    test("a reload while the answer is written follows it to its end", async ({ page }) => {
      gateway.answers.push({ content: "is 348 m.", steps: [{ text: "The mean elevation " }, { hold: true }] });
      await openApp(page, stack.url());
      await ask(page, "What is the mean elevation of Luxembourg?");
      await expect(lastAnswer(page).getByTestId("answer")).toHaveText("The mean elevation");

      await reload(page);
      await expect(lastAnswer(page).getByTestId("answer")).toHaveText("The mean elevation");
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "streaming");
      await shot(page, `reload-writing-${name}`);
      await gateway.releaseHeld();
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
      await expect(lastAnswer(page).getByTestId("answer")).toHaveText("The mean elevation is 348 m.");
    });
  });
}
