import { expect, test, type Page } from "@playwright/test";
import { readFileSync } from "node:fs";
import { seriousViolations } from "./axe";
import { DESKTOP, PHONE, ask, contrast, lastAnswer, openApp, serveWithFakeGateway, shot } from "./fakeStack";
import { errorBody } from "./fakeGateway";

/**
 * What a chat app offers on its messages and conversations: copy an answer, regenerate it,
 * edit a question and send it again, search the conversations, export one as Markdown with
 * its figures. Served with Vite against the stand-in gateway.
 */

const stack = serveWithFakeGateway();
const { gateway } = stack;

const VIEWPORTS = [
  { name: "desktop", size: DESKTOP },
  { name: "phone", size: PHONE },
];

async function sidebar(page: Page) {
  const nav = page.getByRole("navigation", { name: "Conversations" });
  if (!(await nav.isVisible())) await page.getByRole("button", { name: "Conversations" }).click();
  await expect(nav).toBeVisible();
  return nav;
}

for (const { name, size } of VIEWPORTS) {
  test.describe(`at ${name} size`, () => {
    test.use({ viewport: size, permissions: ["clipboard-read", "clipboard-write"] });

    test("copy an answer, regenerate it, edit a question and send it again", async ({ page }) => {
      gateway.answers.push(
        { content: "Luxembourg's mean elevation is **348 m**." },
        { content: "The mean elevation is 348.2 m." },
        { content: "The highest point is Kneiff, 560 m." },
      );
      await openApp(page, stack.url());
      await ask(page, "What is the mean elevation of Luxembourg?");
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");

      // Copy: the answer's Markdown, as written.
      await lastAnswer(page).getByRole("button", { name: "Copy answer" }).click();
      await expect(lastAnswer(page).getByRole("button", { name: "Copy answer" })).toHaveText("Copied");
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe("Luxembourg's mean elevation is **348 m**.");
      expect(await seriousViolations(page)).toEqual([]);
      await shot(page, `chat-controls-${name}`);

      // Regenerate: the same question again, in place of the old turn (here and in the stored history).
      const questions = page.locator("article.message-user");
      const answers = page.locator("article.message-assistant");
      await lastAnswer(page).getByRole("button", { name: "Regenerate" }).click();
      await expect(lastAnswer(page).getByTestId("answer")).toHaveText("The mean elevation is 348.2 m.");
      expect(gateway.requests.map((r) => r.message)).toEqual([
        "What is the mean elevation of Luxembourg?",
        "What is the mean elevation of Luxembourg?",
      ]);
      expect(gateway.requests[1].replace_turn).toBe(0);
      await expect(questions).toHaveCount(1);
      await expect(answers).toHaveCount(1);
      // Only the newest answer offers it.
      await expect(page.getByRole("button", { name: "Regenerate" })).toHaveCount(1);
      const sessionId = gateway.requests[1].session_id!;
      const stored = () => gateway.sessions.get(sessionId)!.messages.map((m) => [m.role, m.content]);
      expect(stored()).toEqual([
        ["user", "What is the mean elevation of Luxembourg?"],
        ["assistant", "The mean elevation is 348.2 m."],
      ]);

      // Edit and resend: readable on the blue bubble; the question comes back into the message box,
      // marked as an edit, and the sent question replaces it and its answer.
      const edit = questions.first().getByRole("button", { name: "Edit and resend" });
      const look = await edit.evaluate((el) => ({ color: getComputedStyle(el).color, background: getComputedStyle(el).backgroundColor }));
      expect(contrast(look.color, look.background)).toBeGreaterThanOrEqual(4.5);
      await edit.click();
      const input = page.getByRole("textbox", { name: "Message" });
      await expect(input).toHaveValue("What is the mean elevation of Luxembourg?");
      await expect(input).toBeFocused();
      await expect(page.getByTestId("editing-note")).toBeVisible();
      expect(await seriousViolations(page)).toEqual([]);
      await shot(page, `chat-edit-${name}`);
      await input.fill("What is the highest point of Luxembourg?");
      await input.press("Enter");
      await expect(lastAnswer(page).getByTestId("answer")).toHaveText("The highest point is Kneiff, 560 m.");
      await expect(page.getByTestId("editing-note")).toHaveCount(0);
      expect(gateway.requests.at(-1)?.message).toBe("What is the highest point of Luxembourg?");
      expect(gateway.requests.at(-1)?.replace_turn).toBe(0);
      await expect(questions.locator(".message-text")).toHaveText(["What is the highest point of Luxembourg?"]);
      await expect(answers).toHaveCount(1);
      // In the same conversation, which holds only the new turn, also after a reload.
      expect(gateway.requests.at(-1)?.session_id).toBe(sessionId);
      const newTurn = [
        ["user", "What is the highest point of Luxembourg?"],
        ["assistant", "The highest point is Kneiff, 560 m."],
      ];
      expect(stored()).toEqual(newTurn);
      await page.reload();
      if (name === "phone" && !(await page.getByRole("textbox", { name: "Message" }).isVisible())) {
        await page.getByRole("button", { name: "Chat" }).click();
      }
      await expect(lastAnswer(page).getByTestId("answer")).toHaveText("The highest point is Kneiff, 560 m.");
      await expect(questions).toHaveCount(1);
      await expect(answers).toHaveCount(1);

      // After the reload the turns carry their place: a second question, then editing the first again.
      gateway.answers.push({ content: "Kneiff is in Troisvierges." }, { content: "The lowest point is 129 m." });
      await ask(page, "Where is Kneiff?");
      await expect(lastAnswer(page).getByTestId("answer")).toHaveText("Kneiff is in Troisvierges.");
      await expect(questions).toHaveCount(2);
      await questions.nth(1).getByRole("button", { name: "Edit and resend" }).click();
      await page.getByTestId("editing-note").getByRole("button", { name: "Cancel edit" }).click();
      await expect(page.getByTestId("editing-note")).toHaveCount(0);
      await expect(input).toHaveValue("");
      await questions.first().getByRole("button", { name: "Edit and resend" }).click();
      await input.fill("What is the lowest point of Luxembourg?");
      await input.press("Enter");
      await expect(lastAnswer(page).getByTestId("answer")).toHaveText("The lowest point is 129 m.");
      expect(gateway.requests.at(-1)?.replace_turn).toBe(0);
      await expect(questions).toHaveCount(1);
      const lowest = [
        ["user", "What is the lowest point of Luxembourg?"],
        ["assistant", "The lowest point is 129 m."],
      ];
      expect(stored()).toEqual(lowest);

      // A replacement the gateway refuses changes nothing: the old turn stays on the page (as in the
      // stored history) and the edited question goes back into the message box.
      gateway.refuseNext = {
        status: 409,
        body: errorBody("conflict", "this session already has a run in progress", null, { run_id: "r-other" }),
      };
      await questions.first().getByRole("button", { name: "Edit and resend" }).click();
      await input.fill("What is the area of Luxembourg?");
      await input.press("Enter");
      await expect(page.getByText("This conversation is still answering a previous message.")).toBeVisible();
      expect(gateway.requests.at(-1)?.replace_turn).toBe(0);
      await expect(questions.locator(".message-text")).toHaveText(["What is the lowest point of Luxembourg?"]);
      await expect(lastAnswer(page).getByTestId("answer")).toHaveText("The lowest point is 129 m.");
      await expect(input).toHaveValue("What is the area of Luxembourg?");
      await expect(page.getByTestId("editing-note")).toBeVisible();
      expect(stored()).toEqual(lowest);
    });

    test("a message the gateway refuses says why, naming the field", async ({ page }) => {
      await openApp(page, stack.url());
      // The gateway's one error body: the field at fault, and a message that names it.
      const refusal = errorBody("invalid_argument", "Input should be less than or equal to 24", "spatial_context.zoom");
      gateway.refuseNext = { status: 422, body: refusal };
      await ask(page, `Where am I, ${name}?`);
      await expect(
        page.getByText("The request was refused: spatial_context.zoom: Input should be less than or equal to 24").first(),
      ).toBeVisible();
    });

    test("conversations are searched by title", async ({ page }) => {
      gateway.answers.push({ content: "Berlin lies on the Spree." }, { content: "Nairobi is at 1,795 m." });
      await openApp(page, stack.url());
      await ask(page, `Where is Berlin, ${name}?`);
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
      let nav = await sidebar(page);
      await nav.getByRole("button", { name: "+ New conversation" }).click();
      if (name === "phone") await page.getByRole("button", { name: "Chat" }).click();
      await ask(page, `How high is Nairobi, ${name}?`);
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");

      nav = await sidebar(page);
      const search = nav.getByRole("searchbox", { name: "Search conversations" });
      const titles = nav.locator("li.session-item .session-title");
      const all = await titles.count();
      expect(all).toBeGreaterThanOrEqual(2);
      // Any case, any accents.
      await search.fill(`NAÏROBI, ${name.toUpperCase()}`);
      await expect(titles).toHaveText([`How high is Nairobi, ${name}?`]);
      await shot(page, `conversation-search-${name}`);
      await search.fill("lisbon");
      await expect(nav.getByRole("status")).toHaveText("No conversation title contains “lisbon”.");
      await search.fill("");
      await expect(titles).toHaveCount(all);
    });

    test("a conversation is exported as Markdown with its figures", async ({ page }) => {
      const chart = { chart: { type: "bar", data: { labels: ["Kneiff", "Buurgplaatz"], datasets: [{ label: "m", data: [560, 559] }] }, options: { plugins: { title: { display: true, text: "Highest points" } } } } };
      gateway.answers.push({
        content: "Kneiff is 1 m higher than Buurgplaatz.",
        tools: [{ name: "get_raster_statistics", arguments: { collection_id: "luxembourg-dem", place: "Luxembourg" }, result: '{"max": 560}' }],
        steps: [{ frontend: { name: "generate_chart", arguments: chart } }],
      });
      await openApp(page, stack.url());
      await ask(page, "Chart the two highest points of Luxembourg");
      await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
      await expect(lastAnswer(page).locator("figure.chart")).toHaveAttribute("data-chart-ready", "true");

      const downloading = page.waitForEvent("download");
      await page.getByRole("button", { name: "Export" }).click();
      const download = await downloading;
      expect(download.suggestedFilename()).toMatch(/^stacgis-chart-the-two-highest-points-of-lux[a-z-]*-\d{4}-\d{2}-\d{2}\.md$/);
      const markdown = readFileSync((await download.path())!, "utf8");
      expect(markdown).toContain("## You\n\nChart the two highest points of Luxembourg");
      expect(markdown).toContain("## Assistant");
      expect(markdown).toContain('- `get_raster_statistics` {"collection_id":"luxembourg-dem","place":"Luxembourg"} (40 ms)');
      expect(markdown).toContain("Kneiff is 1 m higher than Buurgplaatz.");
      expect(markdown).toMatch(/!\[[^\]]*\]\(data:image\/png;base64,[A-Za-z0-9+/=]{100,}\)/);
      await shot(page, `export-${name}`);
    });
  });
}
