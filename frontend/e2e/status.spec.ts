import { expect, test, type Page } from "@playwright/test";
import { seriousViolations } from "./axe";
import { DESKTOP, PHONE, ask, lastAnswer, openApp, serveWithFakeGateway, shot } from "./fakeStack";

/**
 * The status line of a run: every phase the events tell (a free slot, the model, thinking,
 * a tool, an approval, writing) with its elapsed time, in the answer and above the message box.
 */

const stack = serveWithFakeGateway();
const { gateway } = stack;

const VIEWPORTS = [
  { name: "desktop", size: DESKTOP },
  { name: "phone", size: PHONE },
];

/** Both lines say `label`. */
async function expectStatus(page: Page, label: string | RegExp): Promise<void> {
  await expect(page.getByTestId("run-status-feed").locator(".run-status-label")).toHaveText(label);
  await expect(page.getByTestId("run-status-composer").locator(".run-status-label")).toHaveText(label);
}

for (const { name, size } of VIEWPORTS) {
  test.describe(`at ${name} size`, () => {
    test.use({ viewport: size });

    test("every phase of a run is named with its elapsed time, in the answer and above the message box", async ({ page }) => {
      gateway.answers.push({
        content: "elevation is 348 m.",
        steps: [
          { hold: true },
          { thinking: "The mean needs the DEM's statistics over the country." },
          { hold: true },
          {
            tool: { name: "get_raster_statistics", arguments: { collection_id: "luxembourg-dem", place: "Luxembourg" }, result: '{"mean": 348.2}' },
            hold: true,
          },
          { text: "The mean " },
          { hold: true },
        ],
      });
      await openApp(page, stack.url());
      await ask(page, "What is the mean elevation of Luxembourg?");

      // Asked, no token yet: the model reads the prompt or serves someone else.
      await expectStatus(page, "Waiting for the model");
      await expect(page.getByTestId("run-status-feed")).toContainText("reading the prompt, or still busy with another request");
      const time = page.getByTestId("run-status-composer-time");
      await expect(time).toHaveText(/^ · \d+ s$/);
      // The seconds count on.
      await expect(time).not.toHaveText(" · 0 s");
      await expect(page.getByTestId("run-status-feed-time")).not.toHaveText(" · 0 s");
      expect(await seriousViolations(page)).toEqual([]);
      await shot(page, `status-model-${name}`);

      await gateway.releaseHeld();
      await expectStatus(page, "Thinking");
      await shot(page, `status-thinking-${name}`);

      await gateway.releaseHeld();
      await expectStatus(page, "Calling get_raster_statistics");
      await shot(page, `status-tool-${name}`);

      await gateway.releaseHeld();
      await expectStatus(page, "Writing the answer");
      await expect(lastAnswer(page).getByTestId("answer")).toHaveText("The mean");
      // A new activity counts from zero; the run's own time is given beside it.
      await expect(time).toHaveText(/^ · \d+ s \(\d+ s in all\)$/);
      await shot(page, `status-writing-${name}`);

      await gateway.releaseHeld();
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
      await expect(lastAnswer(page).getByTestId("answer")).toHaveText("The mean elevation is 348 m.");
      await expect(page.getByTestId("run-status-feed")).toHaveCount(0);
      await expect(page.getByTestId("run-status-composer")).toHaveCount(0);
    });

    test("waiting for a free slot and for an approval are named too", async ({ page }) => {
      await openApp(page, stack.url());
      gateway.busy = true;
      gateway.answers.push({
        content: "Saved.",
        steps: [{ approval: { name: "add_knowledge", arguments: { title: "Kneiff" }, result: '{"id": "k-1"}' } }],
      });
      await ask(page, "Remember that Kneiff is the highest point");
      await expectStatus(page, "Waiting for a free model slot");
      await expect(page.getByTestId("run-status-composer-time")).toHaveText(/^ · \d+ s$/);
      await shot(page, `status-queued-${name}`);

      // A slot frees: the queued message goes by itself and reaches the approval.
      gateway.busy = false;
      const dialog = page.getByRole("dialog", { name: "Allow this action?" });
      await expect(dialog).toBeVisible({ timeout: 30_000 });
      await expect(page.getByTestId("run-status-composer").locator(".run-status-label")).toHaveText(
        "Waiting for your approval of add_knowledge",
      );
      await dialog.getByRole("button", { name: "Approve" }).click();
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
      await expect(page.getByTestId("run-status-composer")).toHaveCount(0);
    });
  });
}
