import { expect, test, type Page } from "@playwright/test";
import { DESKTOP, PHONE, ask, lastAnswer, openApp, serveWithFakeGateway, shot } from "./fakeStack";

/**
 * The conversation keeps its newest content in view while an answer streams,
 * including a chart that is drawn after its message arrived. Served with Vite
 * against the stand-in gateway (see ./fakeStack.ts).
 */

const stack = serveWithFakeGateway();
const { gateway } = stack;

const CHART = {
  chart: {
    type: "bar",
    data: {
      labels: ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"],
      datasets: [{ label: "Precipitation (mm)", data: [72, 60, 68, 58, 70, 74, 71, 77, 70, 79, 76, 82] }],
    },
    options: { plugins: { title: { display: true, text: "Monthly precipitation, Luxembourg" } } },
  },
};

/** Distance (px) between the bottom of the conversation's content and the bottom of its view. */
function gapBelow(page: Page): Promise<number> {
  return page.getByRole("log", { name: "Messages" }).evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight);
}

for (const { name, size } of [
  { name: "desktop", size: DESKTOP },
  { name: "phone", size: PHONE },
]) {
  test(`the chat follows a chart drawn into the newest answer (${name})`, async ({ page }) => {
    test.setTimeout(120_000);
    await page.setViewportSize(size);
    const paragraphs = Array.from({ length: 12 }, (_, i) => `Paragraph ${i + 1}: Luxembourg's climate is temperate, with rain in every season.`);
    gateway.answers.push(
      {
        content: paragraphs.join("\n\n"),
        tools: [{ name: "list_raster_collections", arguments: {}, result: '[{"id": "luxembourg-dem"}, {"id": "bcsd-precipitation"}]' }],
      },
      {
        content: " The wettest month is December.",
        tools: [
          {
            name: "get_raster_time_series",
            arguments: { collection_id: "bcsd-precipitation", lat: 49.6, lon: 6.1 },
            result: JSON.stringify({ values: CHART.chart.data.datasets[0].data, unit: "mm" }),
          },
        ],
        steps: [{ text: "Here is the monthly precipitation:" }, { frontend: { name: "generate_chart", arguments: CHART } }],
      },
    );
    await openApp(page, stack.url());
    await ask(page, "Describe the climate of Luxembourg");
    await expect(lastAnswer(page)).toHaveAttribute("data-status", "complete");
    // The first answer is longer than the view: the conversation scrolls.
    const log = page.getByRole("log", { name: "Messages" });
    expect(await log.evaluate((el) => el.scrollHeight > el.clientHeight)).toBe(true);

    await ask(page, "Chart the monthly precipitation");
    const answer = lastAnswer(page);
    await expect(answer).toHaveAttribute("data-status", "complete");
    const chart = answer.locator("figure.chart");
    await expect(chart).toHaveAttribute("data-chart-ready", "true");
    await expect(answer.getByTestId("answer")).toHaveText("Here is the monthly precipitation: The wettest month is December.");

    // Still at the newest content: the chart and the answer's end are in view, no "Jump to latest".
    await expect.poll(() => gapBelow(page)).toBeLessThanOrEqual(2);
    await expect(page.getByRole("button", { name: "Jump to latest ↓" })).toHaveCount(0);
    await expect(chart).toBeInViewport();
    await shot(page, `chat-chart-followed-${name}`);
  });
}
