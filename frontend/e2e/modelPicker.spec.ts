import { expect, test } from "@playwright/test";
import { seriousViolations } from "./axe";
import { DESKTOP, PHONE, ask, lastAnswer, openApp, serveWithFakeGateway, shot } from "./fakeStack";

/**
 * The model picker: shown when the gateway's GET /models offers more than one model; the model
 * picked goes with each message (`model`) and is kept across reloads; with one model there is
 * only the badge.
 */

const stack = serveWithFakeGateway();
const { gateway } = stack;

const VIEWPORTS = [
  { name: "desktop", size: DESKTOP },
  { name: "phone", size: PHONE },
];

for (const { name, size } of VIEWPORTS) {
  test.describe(`at ${name} size`, () => {
    test.use({ viewport: size });

    test("the model picked is sent with the message and kept after a reload", async ({ page }) => {
      gateway.models = ["fake-model", "fake-model-large"];
      gateway.answers.push({ content: "Answered by the default." }, { content: "Answered by the large one." });
      await openApp(page, stack.url());
      const picker = page.getByRole("combobox", { name: "Model" });
      await expect(picker).toBeVisible();
      await expect(picker.locator("option")).toHaveText(gateway.models.map((m, i) => (i === 0 ? `${m} (default)` : m)));
      await expect(picker).toHaveValue(gateway.models[0]);

      // The default needs no name: the request leaves `model` out.
      await ask(page, "Which model answers?");
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
      expect(gateway.requests.at(-1)?.model).toBeUndefined();

      await picker.selectOption(gateway.models[1]);
      expect(await seriousViolations(page)).toEqual([]);
      await shot(page, `model-picker-${name}`);
      await ask(page, "And now?");
      await expect(lastAnswer(page).getByTestId("answer")).toHaveText("Answered by the large one.");
      expect(gateway.requests.at(-1)?.model).toBe(gateway.models[1]);

      await page.reload();
      await expect(page.getByRole("combobox", { name: "Model" })).toHaveValue(gateway.models[1]);
    });

    test("with one model there is no picker, and a choice no longer offered is dropped", async ({ page }) => {
      gateway.models = ["fake-model", "fake-model-large"];
      await openApp(page, stack.url());
      await page.getByRole("combobox", { name: "Model" }).selectOption("fake-model-large");
      gateway.models = ["fake-model"];
      gateway.answers.push({ content: "Only one model here." });
      await page.reload();
      await expect(page.getByTestId("model")).toHaveText("Model: fake-model (test)");
      await expect(page.getByRole("combobox", { name: "Model" })).toHaveCount(0);
      await ask(page, "Which model?");
      await expect(lastAnswer(page).getByTestId("answer")).toHaveText("Only one model here.");
      expect(gateway.requests.at(-1)?.model).toBeUndefined();
    });
  });
}
