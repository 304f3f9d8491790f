import { expect, test, type Page } from "@playwright/test";
import {
  APPROVAL_TOOL,
  addRules,
  approvalArguments,
  lastAnswer,
  openApp,
  resetRules,
  screenshot,
  send,
  uniqueToken,
  waitForAnswer,
} from "./support";

test.afterAll(async ({ request }) => {
  await resetRules(request);
});

interface Capacity {
  active: number;
  max: number;
  available: number;
}

async function capacity(page: Page): Promise<Capacity> {
  const resp = await page.request.get("/api/v1/chat/capacity");
  expect(resp.ok()).toBe(true);
  return (await resp.json()) as Capacity;
}

test("with every slot busy a second browser is queued, then served", async ({ browser, request }) => {
  const token = uniqueToken("queue");
  const slow = "Taking my time. ".repeat(12);
  await addRules(request, [
    { name: `${token}-slow`, match: { last_user: `${token}-slow` }, content: slow, chunk_chars: 8, delay_ms: 350 },
    { name: `${token}-fast`, match: { last_user: `${token}-fast` }, content: "Served after waiting.", delay_ms: 1 },
  ]);

  const first = await (await browser.newContext()).newPage();
  const second = await (await browser.newContext()).newPage();
  await openApp(first);
  await openApp(second);
  const { max } = await capacity(first);
  expect(max, "the gate must be small enough to fill from one test").toBeLessThanOrEqual(8);

  // The first browser takes one slot; background runs of other users take the rest.
  await send(first, `Long answer ${token}-slow`);
  await expect(lastAnswer(first).getByTestId("answer")).toContainText("Taking");
  const fillers: Promise<unknown>[] = [];
  for (let i = 1; i < max; i++) {
    const ctx = await browser.newContext();
    fillers.push(
      ctx.request.post("/api/v1/chat/stream", {
        data: { message: `Filler ${i} ${token}-slow`, session_id: null, spatial_context: null },
        timeout: 90_000,
      }),
    );
  }
  await expect.poll(async () => (await capacity(first)).available, { timeout: 20_000 }).toBe(0);

  await send(second, `Quick question ${token}-fast`);
  const banner = second.locator("[data-notice=queued]");
  await expect(banner).toBeVisible();
  await expect(banner).toContainText("queued");
  await expect(lastAnswer(second)).toContainText("Waiting for a free model slot");
  await screenshot(second, "queue-waiting");

  // When the long answers end, the queued browser is served by itself.
  await waitForAnswer(first);
  const served = await waitForAnswer(second);
  await expect(served.getByTestId("answer")).toHaveText("Served after waiting.");
  await expect(banner).toHaveCount(0);
  await Promise.allSettled(fillers);
  await screenshot(second, "queue-served");
});

test("the approval dialog approves a gated tool and the run continues", async ({ page, request }) => {
  const token = uniqueToken("approve");
  const args = approvalArguments(token);
  await addRules(request, [
    { name: `${token}-call`, match: { last_user: token, step: 0 }, tool_calls: [{ name: APPROVAL_TOOL, arguments: args }] },
    {
      name: `${token}-answer`,
      match: { last_user: token, step: 1 },
      content: "Saved it after your approval.",
      delay_ms: 1,
    },
  ]);
  await openApp(page);
  await send(page, `Add to the knowledge base that Kneiff is the highest point ${token}`);

  const dialog = page.getByRole("dialog", { name: "Allow this action?" });
  await expect(dialog).toBeVisible();
  await expect(dialog.getByTestId("approval-tool")).toHaveText(APPROVAL_TOOL);
  for (const value of Object.values(args)) {
    await expect(dialog.getByTestId("approval-args")).toContainText(JSON.stringify(value));
  }
  await screenshot(page, "approval-dialog");

  await dialog.getByLabel("Reason (optional, sent to the assistant)").fill("Fine by me");
  await dialog.getByRole("button", { name: "Approve" }).click();
  await expect(dialog).toBeHidden();

  const answer = await waitForAnswer(page);
  await expect(answer.getByTestId("answer")).toHaveText("Saved it after your approval.");
  await expect(answer.locator(".activity-approval")).toContainText(`You approved ${APPROVAL_TOOL}`);
  await expect(answer.locator(`li.activity-tool[data-tool=${APPROVAL_TOOL}]`)).toHaveText(/completed \(\d+ ms\)/);
  await screenshot(page, "approval-approved");
});

test("a dropped connection resumes the answer without duplicate text", async ({ page, request }) => {
  const token = uniqueToken("resume");
  const answer = "Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau.";
  await addRules(request, [{ name: token, match: { last_user: token }, content: answer, chunk_chars: 5, delay_ms: 20 }]);
  await openApp(page);

  // The first response is cut off in the middle of an event, as a dropped connection would leave it.
  let cutAfterId: string | null = null;
  await page.route("**/api/v1/chat/stream", async (route) => {
    const upstream = await route.fetch();
    const body = await upstream.text();
    // Split into events at blank lines, keeping the server's own line endings (CRLF).
    const ends = [...body.matchAll(/\r?\n\r?\n/g)].map((m) => m.index + m[0].length);
    const starts = [0, ...ends.slice(0, -1)];
    const events = starts.map((start, i) => body.slice(start, ends[i]));
    const contentIndexes = events.flatMap((e, i) => (/^event: content\r?$/m.test(e) ? [i] : []));
    const cut = contentIndexes[Math.floor(contentIndexes.length / 2)];
    cutAfterId = /^id: ([^\r\n]+)/m.exec(events[cut - 1])?.[1] ?? null;
    const kept = body.slice(0, starts[cut]) + events[cut].slice(0, Math.floor(events[cut].length / 2));
    await route.fulfill({ status: 200, headers: { "Content-Type": "text/event-stream" }, body: kept });
  });
  const resumeRequest = page.waitForRequest((r) => /\/api\/v1\/chat\/runs\/[^/]+\/events$/.test(r.url()));
  // Every text the answer shows on the way, to catch a repeated piece even if the final text is repaired.
  await page.evaluate(() => {
    const w = window as unknown as { __answerTexts: string[] };
    w.__answerTexts = [];
    new MutationObserver(() => {
      const answers = document.querySelectorAll("article.message-assistant [data-testid=answer]");
      const last = answers[answers.length - 1];
      if (last) w.__answerTexts.push(last.textContent ?? "");
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });

  await send(page, `Greek letters please ${token}`);
  const resumed = await resumeRequest;
  expect(cutAfterId).not.toBeNull();
  expect(await resumed.headerValue("last-event-id")).toBe(cutAfterId);

  const done = await waitForAnswer(page);
  await expect(done.getByTestId("answer")).toHaveText(answer);
  const seen = await page.evaluate(() => (window as unknown as { __answerTexts: string[] }).__answerTexts);
  expect(seen.length).toBeGreaterThan(3);
  for (const text of seen) expect(answer.startsWith(text), `shown text was not a prefix: ${text}`).toBe(true);
  await expect(page.locator("[data-notice=resuming]")).toHaveCount(0);
  await screenshot(page, "resumed");
});
