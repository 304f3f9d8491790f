import { expect, test } from "@playwright/test";
import { addRules, lastAnswer, openApp, resetRules, screenshot, send, uniqueToken, waitForAnswer } from "./support";

test.afterAll(async ({ request }) => {
  await resetRules(request);
});

test("a question streams its answer and the feed shows the tool calls with durations", async ({ page, request }) => {
  const token = uniqueToken("stream");
  const answer = "There are three raster collections: a Luxembourg elevation model, a global land mask and 2016 precipitation.";
  await addRules(request, [
    {
      name: `${token}-call`,
      match: { last_user: token, step: 0 },
      thinking: "The user wants to know which rasters exist, so I list the collections.",
      tool_calls: [{ name: "list_raster_collections", arguments: {} }],
      delay_ms: 20,
    },
    { name: `${token}-answer`, match: { last_user: token, step: 1 }, content: answer, chunk_chars: 4, delay_ms: 40 },
  ]);
  await openApp(page);

  // Record every length the answer text goes through, to see it arrive in pieces.
  await page.evaluate(() => {
    const w = window as unknown as { __answerLengths: number[] };
    w.__answerLengths = [];
    new MutationObserver(() => {
      const answers = document.querySelectorAll("article.message-assistant [data-testid=answer]");
      const last = answers[answers.length - 1];
      if (last) w.__answerLengths.push(last.textContent?.length ?? 0);
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });

  await send(page, `Which raster collections are there? ${token}`);
  // While the answer streams, the live feed shows the step (a fast tool may go from
  // "Calling" to "completed" within one render).
  const feed = lastAnswer(page).getByRole("log", { name: "Agent activity" });
  await expect(feed).toContainText("list_raster_collections");
  await expect(lastAnswer(page)).toHaveAttribute("data-status", "streaming");
  await screenshot(page, "chat-streaming");

  const done = await waitForAnswer(page);
  await expect(done.getByTestId("answer")).toHaveText(answer);
  await expect(done.locator("li.activity-tool[data-tool=list_raster_collections]")).toHaveText(
    /list_raster_collections completed \(\d+ ms\)/,
  );
  await expect(done.locator(".activity-thinking em")).toContainText("I list the collections");

  const lengths = await page.evaluate(() => (window as unknown as { __answerLengths: number[] }).__answerLengths);
  const partial = lengths.filter((n) => n > 0 && n < answer.length);
  expect(partial.length, "the answer should arrive in several pieces").toBeGreaterThan(3);
  await screenshot(page, "chat-answered");
});

test("reloading the page restores the conversation", async ({ page, request }) => {
  const token = uniqueToken("reload");
  await addRules(request, [
    { name: token, match: { last_user: token }, content: `Remembered answer ${token}.`, chunk_chars: 8, delay_ms: 5 },
  ]);
  await openApp(page);
  await send(page, `Please remember this ${token}`);
  await waitForAnswer(page);
  const sessionId = await page.evaluate(() => localStorage.getItem("stacgis.sessionId"));
  expect(sessionId).toBeTruthy();

  await page.reload();
  await openApp(page);
  await expect(page.locator("article.message-user .message-text")).toHaveText([`Please remember this ${token}`]);
  await expect(lastAnswer(page).getByTestId("answer")).toHaveText(`Remembered answer ${token}.`);
  expect(await page.evaluate(() => localStorage.getItem("stacgis.sessionId"))).toBe(sessionId);
  await screenshot(page, "chat-restored");
});

test("conversations can be renamed, loaded and deleted", async ({ page, request }) => {
  const token = uniqueToken("sessions");
  await addRules(request, [{ name: token, match: { last_user: token }, content: "Noted.", delay_ms: 1 }]);
  await openApp(page);
  await send(page, `First conversation ${token}`);
  await waitForAnswer(page);

  const sidebar = page.getByRole("navigation", { name: "Conversations" });
  if (!(await sidebar.isVisible())) await page.getByRole("button", { name: "Conversations" }).click();
  const current = sidebar.locator("li.session-item.current");
  await expect(current).toHaveCount(1);

  await current.getByRole("button", { name: /^Rename/ }).click();
  const title = `Trip planning ${token}`;
  await sidebar.getByRole("textbox").fill(title);
  await sidebar.getByRole("button", { name: "Save" }).click();
  await expect(sidebar.locator("li.session-item.current .session-title")).toHaveText(title);
  await expect(page.locator("#chat-title")).toHaveText(title);
  await screenshot(page, "sessions-renamed");

  // A second conversation, then back to the first from the list.
  await sidebar.getByRole("button", { name: "+ New conversation" }).click();
  await expect(page.locator("article.message")).toHaveCount(0);
  await send(page, `Second conversation ${token}`);
  await waitForAnswer(page);
  await expect(sidebar.locator("li.session-item")).toHaveCount(2);
  await sidebar.locator("li.session-item", { hasText: title }).locator("button.session-open").click();
  await expect(page.locator("article.message-user .message-text")).toHaveText([`First conversation ${token}`]);

  // The name survives a reload (it is stored by the gateway).
  await page.reload();
  await openApp(page);
  if (!(await sidebar.isVisible())) await page.getByRole("button", { name: "Conversations" }).click();
  await expect(sidebar.locator(".session-title", { hasText: title })).toHaveCount(1);

  const renamed = sidebar.locator("li.session-item", { hasText: title });
  await renamed.getByRole("button", { name: `Delete ${title}` }).click();
  await renamed.getByRole("button", { name: "Delete", exact: true }).click();
  await expect(sidebar.locator(".session-title", { hasText: title })).toHaveCount(0);
  await expect(sidebar.locator("li.session-item")).toHaveCount(1);
  await expect(page.locator("article.message")).toHaveCount(0);
  await page.reload();
  await openApp(page);
  if (!(await sidebar.isVisible())) await page.getByRole("button", { name: "Conversations" }).click();
  await expect(sidebar.locator("li.session-item")).toHaveCount(1);
  await screenshot(page, "sessions-deleted");
});

test("the stop button cancels a running answer", async ({ page, request }) => {
  const token = uniqueToken("stop");
  await addRules(request, [
    { name: token, match: { last_user: token }, content: "word ".repeat(400), chunk_chars: 5, delay_ms: 100 },
  ]);
  await openApp(page);
  await send(page, `Tell me a long story ${token}`);
  const answer = lastAnswer(page);
  await expect(answer.getByTestId("answer")).toContainText("word");
  await page.getByRole("button", { name: "Stop" }).click();
  await expect(answer).toHaveAttribute("data-status", "cancelled");
  await expect(page.locator("[data-notice=cancelled]")).toBeVisible();
  await expect(page.getByRole("button", { name: "Send", exact: true })).toBeVisible();
  await screenshot(page, "chat-cancelled");
});

test("a model outage is shown as such", async ({ page, request }) => {
  const token = uniqueToken("outage");
  await addRules(request, [{ name: token, match: { last_user: token }, error: { status: 503, message: "model is loading" } }]);
  await openApp(page);
  await send(page, `Anyone there? ${token}`);
  const answer = await waitForAnswer(page, "error");
  await expect(answer.locator(".message-error")).toBeVisible();
  await expect(page.locator("[data-notice=model_unavailable]")).toContainText("model is unavailable");
  await screenshot(page, "model-unavailable");
});

test("the conversation follows new text unless the user scrolled up", async ({ page, request }) => {
  const token = uniqueToken("scroll");
  const lines = Array.from({ length: 60 }, (_, i) => `Line ${i + 1} of a long answer.`).join("\n\n");
  await addRules(request, [{ name: token, match: { last_user: token }, content: lines, chunk_chars: 12, delay_ms: 40 }]);
  await page.setViewportSize({ width: 1200, height: 700 });
  await openApp(page);
  await send(page, `A long answer please ${token}`);

  const conversation = page.getByRole("log", { name: "Messages" });
  const atBottom = () =>
    conversation.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight <= 24);
  await expect.poll(() => conversation.evaluate((el) => el.scrollHeight > el.clientHeight + 200)).toBe(true);
  expect(await atBottom()).toBe(true);

  // Scrolled up: the view stays where the user put it while text keeps coming.
  await conversation.evaluate((el) => {
    el.scrollTop = 0;
    el.dispatchEvent(new Event("scroll"));
  });
  const heightBefore = await conversation.evaluate((el) => el.scrollHeight);
  await expect.poll(() => conversation.evaluate((el) => el.scrollHeight)).toBeGreaterThan(heightBefore + 50);
  expect(await conversation.evaluate((el) => el.scrollTop)).toBeLessThan(5);
  const jump = page.getByRole("button", { name: "Jump to latest ↓" });
  await expect(jump).toBeVisible();
  await screenshot(page, "chat-scrolled-up");

  // Back at the bottom: following resumes.
  await jump.click();
  await expect.poll(atBottom).toBe(true);
  const grown = await conversation.evaluate((el) => el.scrollHeight);
  await expect.poll(() => conversation.evaluate((el) => el.scrollHeight)).toBeGreaterThan(grown + 30);
  expect(await atBottom()).toBe(true);
  await waitForAnswer(page);
  expect(await atBottom()).toBe(true);
});
