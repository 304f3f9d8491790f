import { expect, test, type APIRequestContext, type Page } from "@playwright/test";
import { seriousViolations } from "./axe";
import {
  MODEL_SERVER_URL,
  addRules,
  lastAnswer,
  openApp,
  resetRules,
  screenshot,
  send,
  uniqueToken,
  waitForAnswer,
} from "./support";

/**
 * Regenerate, edit and resend, and the model picker through the whole product (`make up`): the real
 * gateway with its Postgres history, the orchestrator and the scripted model server. The stand-in
 * gateway's specs (chatControls, modelPicker) check the page; these check that the turn replaced is
 * gone from the stored history, from what the model is given next, and that the gateway offers and
 * checks the models the orchestrator's provider has.
 */

test.afterAll(async ({ request }) => {
  await resetRules(request);
});

type Turn = [role: string, content: string];

interface ModelRequest {
  rule: string | null;
  model: string;
  body: { messages?: { role: string; content: string }[] };
}

const questionTexts = (page: Page) => page.locator("article.message-user .message-text");
const answers = (page: Page) => page.locator("article.message-assistant");

async function sessionId(page: Page): Promise<string> {
  const id = await page.evaluate(() => localStorage.getItem("stacgis.sessionId"));
  expect(id, "the conversation has an id once its first run started").toBeTruthy();
  return id!;
}

/** The conversation's questions and answers as the gateway stores them (Postgres), in order. */
async function storedTurns(page: Page, id: string): Promise<{ title: string | null; turns: Turn[] }> {
  const resp = await page.request.get(`/api/v1/chat/session/${id}/history`);
  expect(resp.status(), await resp.text()).toBe(200);
  const history = (await resp.json()) as { title: string | null; messages: { role: string; content: string | null }[] };
  const turns = history.messages
    .filter((m) => m.role === "user" || m.role === "assistant")
    .map((m): Turn => [m.role, m.content ?? ""]);
  return { title: history.title, turns };
}

/** What the scripted model was asked in the requests whose body contains `text`, oldest first. */
async function modelRequests(request: APIRequestContext, text: string): Promise<ModelRequest[]> {
  const resp = await request.get(`${MODEL_SERVER_URL}/_scripted/requests`, { params: { contains: text } });
  expect(resp.ok()).toBe(true);
  return ((await resp.json()) as { requests: ModelRequest[] }).requests;
}

function conversationOf(req: ModelRequest): string {
  return (req.body.messages ?? []).map((m) => `${m.role}: ${m.content}`).join("\n");
}

async function reload(page: Page): Promise<void> {
  await page.reload();
  await page.waitForFunction(() => Boolean(window.__stacgisMap?.loaded()));
}

test("regenerate replaces the answer on the page, in the stored history and in what the model is given", async ({
  page,
  request,
}) => {
  const token = uniqueToken("regen");
  const question = `Greet the map for me ${token}`;
  const first = "Hello map, this is the first answer.";
  const second = "Hello again, map: this answer was regenerated.";
  // The first request of the question gets the first answer, every later one the second.
  await addRules(request, [
    { name: `${token}-first`, match: { last_user: token }, content: first, chunk_chars: 6, delay_ms: 10, times: 1 },
    { name: `${token}-again`, match: { last_user: token }, content: second, chunk_chars: 6, delay_ms: 10 },
  ]);
  await openApp(page);
  await send(page, question);
  await expect((await waitForAnswer(page)).getByTestId("answer")).toHaveText(first);
  const id = await sessionId(page);
  expect((await storedTurns(page, id)).turns).toEqual([
    ["user", question],
    ["assistant", first],
  ]);

  await lastAnswer(page).getByRole("button", { name: "Regenerate" }).click();
  await expect(lastAnswer(page).getByTestId("answer")).toHaveText(second);
  await waitForAnswer(page);
  await expect(questionTexts(page)).toHaveText([question]);
  await expect(answers(page)).toHaveCount(1);
  await expect(page.getByRole("button", { name: "Regenerate" })).toHaveCount(1);
  expect(await seriousViolations(page)).toEqual([]);
  await screenshot(page, "chat-controls-stack-regenerated");

  // The model was asked twice, the second time without the answer it is replacing.
  const asked = await modelRequests(request, token);
  expect(asked.map((r) => r.rule)).toEqual([`${token}-first`, `${token}-again`]);
  expect(conversationOf(asked[1])).not.toContain(first);

  // Stored once, with the new answer only: after a reload and through the gateway's API.
  await reload(page);
  await expect(questionTexts(page)).toHaveText([question]);
  await expect(answers(page)).toHaveCount(1);
  await expect(lastAnswer(page).getByTestId("answer")).toHaveText(second);
  expect(await sessionId(page)).toBe(id);
  expect((await storedTurns(page, id)).turns).toEqual([
    ["user", question],
    ["assistant", second],
  ]);
});

test("edit and resend replaces the last question and its answer, also after a reload", async ({ page, request }) => {
  const [one, two, three] = [uniqueToken("edit"), uniqueToken("edit"), uniqueToken("edit")];
  const q1 = `Greet the map for me ${one}`;
  const q2 = `Now greet the sea ${two}`;
  const q3 = `Now greet the mountains instead ${three}`;
  const a1 = "Hello map.";
  const a2 = "Hello sea.";
  const a3 = "Hello mountains, the question was edited.";
  await addRules(request, [
    { name: `${one}-answer`, match: { last_user: one }, content: a1, delay_ms: 1 },
    { name: `${two}-answer`, match: { last_user: two }, content: a2, delay_ms: 1 },
    { name: `${three}-answer`, match: { last_user: three }, content: a3, chunk_chars: 6, delay_ms: 10 },
  ]);
  await openApp(page);
  await send(page, q1);
  await expect((await waitForAnswer(page)).getByTestId("answer")).toHaveText(a1);
  await send(page, q2);
  await expect(answers(page)).toHaveCount(2);
  await expect((await waitForAnswer(page)).getByTestId("answer")).toHaveText(a2);
  const id = await sessionId(page);

  // After a reload each question knows its place from the stored history: the edit replaces the second.
  await reload(page);
  await expect(questionTexts(page)).toHaveText([q1, q2]);
  await page.locator("article.message-user").nth(1).getByRole("button", { name: "Edit and resend" }).click();
  const input = page.getByRole("textbox", { name: "Message" });
  await expect(input).toHaveValue(q2);
  await expect(input).toBeFocused();
  await expect(page.getByTestId("editing-note")).toBeVisible();
  await screenshot(page, "chat-controls-stack-editing");
  await input.fill(q3);
  await input.press("Enter");
  await expect(lastAnswer(page).getByTestId("answer")).toHaveText(a3);
  await waitForAnswer(page);
  await expect(page.getByTestId("editing-note")).toHaveCount(0);
  await expect(questionTexts(page)).toHaveText([q1, q3]);
  await expect(answers(page).getByTestId("answer")).toHaveText([a1, a3]);
  await screenshot(page, "chat-controls-stack-edited");

  // The model was given the first turn, and not the replaced one.
  const asked = await modelRequests(request, three);
  expect(asked.map((r) => r.rule)).toEqual([`${three}-answer`]);
  const given = conversationOf(asked[0]);
  expect(given).toContain(q1);
  expect(given).toContain(a1);
  expect(given).not.toContain(two);
  expect(given).not.toContain(a2);

  const expected: Turn[] = [
    ["user", q1],
    ["assistant", a1],
    ["user", q3],
    ["assistant", a3],
  ];
  expect((await storedTurns(page, id)).turns).toEqual(expected);
  await reload(page);
  await expect(questionTexts(page)).toHaveText([q1, q3]);
  await expect(answers(page).getByTestId("answer")).toHaveText([a1, a3]);
  expect(await sessionId(page)).toBe(id);
  expect((await storedTurns(page, id)).turns).toEqual(expected);
});

test("the model picker shows what the gateway offers, and a model not offered is refused", async ({
  page,
  request,
}) => {
  await openApp(page);
  const listed = await page.request.get("/api/v1/models");
  expect(listed.status(), await listed.text()).toBe(200);
  const { default: fallback, models } = (await listed.json()) as { default: string; models: string[] };
  expect(models[0]).toBe(fallback);
  expect(new Set(models).size).toBe(models.length);

  const picker = page.getByRole("combobox", { name: "Model" });
  if (models.length > 1) {
    await expect(picker).toBeVisible();
    await expect(picker.locator("option")).toHaveText(models.map((m, i) => (i === 0 ? `${m} (default)` : m)));
    await expect(picker).toHaveValue(fallback);
  } else {
    const info = (await (await page.request.get("/api/v1/info")).json()) as { model: string; provider: string };
    await expect(picker).toHaveCount(0);
    await expect(page.getByTestId("model")).toHaveText(`Model: ${info.model}${info.provider ? ` (${info.provider})` : ""}`);
  }
  expect(await seriousViolations(page)).toEqual([]);
  await screenshot(page, "chat-controls-stack-model");

  // A name the provider does not offer: a 422 naming `model`, and no conversation is started.
  const token = uniqueToken("model");
  const unknown = `no-such-model-${token}`;
  const refused = await page.request.post("/api/v1/chat/stream", {
    data: { message: `Which model answers ${token}`, session_id: null, spatial_context: null, model: unknown },
  });
  expect(refused.status()).toBe(422);
  const problem = (await refused.json()) as { field: string | null; message: string; code: string };
  expect(problem.field).toBe("model");
  expect(problem.code).toBe("invalid_argument");
  expect(problem.message).toMatch(new RegExp(`^model: unknown model '${unknown}'; `));
  const sessions = (await (await page.request.get("/api/v1/chat/sessions")).json()) as { title: string | null }[];
  expect(sessions.filter((s) => s.title?.includes(token))).toEqual([]);
  expect(await modelRequests(request, token)).toEqual([]);

  // A name it offers is taken and reaches the model server.
  await addRules(request, [{ name: `${token}-answer`, match: { last_user: token }, content: "Answered by name.", delay_ms: 1 }]);
  const taken = await page.request.post("/api/v1/chat/stream", {
    data: { message: `Which model answers ${token}`, session_id: null, spatial_context: null, model: fallback },
    timeout: 60_000,
  });
  expect(taken.status(), await taken.text()).toBe(200);
  expect(await taken.text()).toMatch(/^event: done\r?$/m);
  const asked = await modelRequests(request, token);
  const bare = (name: string) => name.replace(/:latest$/, "");
  expect(asked.map((r) => [r.rule, bare(r.model)])).toEqual([[`${token}-answer`, bare(fallback)]]);
});
