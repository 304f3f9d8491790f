import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { AnswerGrounding, GroundedNumber } from "../state/chatTypes";
import { UNSUPPORTED_TITLE, locateNumbers, markTitle } from "./groundedNumbers";
import { SafeMarkdown } from "./SafeMarkdown";

/** A checked number at the code-point offsets where `text` stands in `content` (its `nth` occurrence). */
function num(content: string, text: string, supported: boolean, extra: Partial<GroundedNumber> = {}, nth = 0): GroundedNumber {
  let at = -1;
  for (let i = 0; i <= nth; i++) at = content.indexOf(text, at + 1);
  if (at < 0) throw new Error(`${text} not in ${content}`);
  const start = [...content.slice(0, at)].length;
  return {
    text,
    value: Number.parseFloat(text.replace(/,/g, "")),
    unit: text.replace(/^[\d.,\s-]+/, ""),
    start,
    end: start + [...text].length,
    supported,
    callId: supported ? "c1" : "",
    toolName: supported ? "get_raster_statistics" : "",
    sourceValue: supported ? Number.parseFloat(text.replace(/,/g, "")) : 0,
    match: supported ? "exact" : "",
    ...extra,
  };
}

function grounding(numbers: GroundedNumber[]): AnswerGrounding {
  const supported = numbers.filter((n) => n.supported).length;
  return { numbers, supportedCount: supported, unsupportedCount: numbers.length - supported };
}

function html(text: string, g?: AnswerGrounding): string {
  return renderToStaticMarkup(<SafeMarkdown text={text} grounding={g} />);
}

/** The spans the marking made, as [kind, text, title] (entities of the static markup decoded). */
function marks(out: string): [string, string, string][] {
  const found: [string, string, string][] = [];
  const re = /<span class="([^"]*)" title="([^"]*)" data-grounding="(\w+)"[^>]*>([^<]*)<\/span>/g;
  for (let m = re.exec(out); m; m = re.exec(out)) {
    found.push([m[3], m[4], m[2].replaceAll("&gt;", ">")]);
  }
  return found;
}

describe("grounded numbers in an answer", () => {
  it("marks a supported and an unsupported number at their offsets", () => {
    const text = "The mean elevation of Luxembourg is 348 m; the highest point is 1,929 m.";
    const g = grounding([num(text, "348 m", true, { sourceValue: 348.2, match: "rounded" }), num(text, "1,929 m", false)]);
    const out = html(text, g);
    expect(marks(out)).toEqual([
      ["supported", "348 m", "From get_raster_statistics: 348.2 (rounded)"],
      ["unsupported", "1,929 m", UNSUPPORTED_TITLE],
    ]);
    expect(out).toContain('data-tool="get_raster_statistics"');
    // The text itself is unchanged.
    expect(out.replace(/<[^>]+>/g, "")).toBe(text);
  });

  it("counts offsets in code points, so emoji and accents before a number do not shift the mark", () => {
    const text = "Höhe 🏔️ über 𝔐eer: 560 m, Mittel 348 m.";
    const g = grounding([num(text, "560 m", false), num(text, "348 m", true)]);
    // UTF-16 offsets would differ here: the check's offsets are code points.
    expect(g.numbers[0].start).not.toBe(text.indexOf("560 m"));
    expect(marks(html(text, g)).map(([kind, t]) => [kind, t])).toEqual([
      ["unsupported", "560 m"],
      ["supported", "348 m"],
    ]);
    // Repeated numbers after astral characters: read as UTF-16 offsets, each mark would land on its neighbour.
    const row = "🌍🌍 7 7 7 7";
    const kinds = [true, false, true, false].map((ok, i) => num(row, "7", ok, {}, i));
    expect(kinds.map((n) => n.start)).toEqual([3, 5, 7, 9]);
    // Listed last first, so a wrong offset cannot be rescued by the search for the text.
    expect(marks(html(row, grounding(kinds.slice().reverse()))).map(([kind]) => kind)).toEqual([
      "supported",
      "unsupported",
      "supported",
      "unsupported",
    ]);
  });

  it("marks numbers inside table cells", () => {
    const text = "| place | mean | max |\n|---|---|---|\n| Luxembourg | 348 m | 560 m |\n| Kneiff | 12.5 % | n/a |";
    const g = grounding([num(text, "348 m", true), num(text, "560 m", false), num(text, "12.5 %", true)]);
    const out = html(text, g);
    expect(out).toContain("<table>");
    const cells = [...out.matchAll(/<td>(.*?)<\/td>/g)].map((m) => m[1]);
    expect(cells.filter((c) => c.includes("data-grounding"))).toHaveLength(3);
    expect(marks(out).map(([kind, t]) => [kind, t])).toEqual([
      ["supported", "348 m"],
      ["unsupported", "560 m"],
      ["supported", "12.5 %"],
    ]);
  });

  it("marks numbers in list items, across emphasis and continued lines", () => {
    const text = "Results:\n\n- mean **348** m\n- range from\n  254 m to 560 m\n1. first 7 km";
    const g = grounding([num(text, "348** m", true), num(text, "254 m", false), num(text, "560 m", true), num(text, "7 km", false)]);
    const out = html(text, g);
    expect(out).toMatch(/<strong><span class="grounded-number grounded-supported"[^>]*>348<\/span><\/strong>/);
    // The piece after the emphasis closes the number: only it carries the end marker.
    expect(out).toMatch(/<span class="grounded-number grounded-supported grounded-end"[^>]*> m<\/span>/);
    expect(marks(out).map(([kind, t]) => [kind, t])).toEqual([
      ["supported", "348"],
      ["supported", " m"],
      ["unsupported", "254 m"],
      ["supported", "560 m"],
      ["unsupported", "7 km"],
    ]);
  });

  it("renders an answer without grounding exactly as before", () => {
    const text = "Mean **348 m**, see [docs](https://example.org).\n\n| a | b |\n|---|---|\n| 1 | 2 |";
    const plain = html(text);
    expect(plain).not.toContain("grounded");
    expect(html(text, undefined)).toBe(plain);
    expect(html(text, grounding([]))).toBe(plain);
  });

  it("finds a number by its text when the offsets are stale, and skips numbers found nowhere", () => {
    const text = "Area: 2,586 km². Population 660,809.";
    const stale = { ...num(text, "2,586 km²", true), start: 0, end: 4 };
    const absent = { ...num(text, "Population", false), text: "999 m" };
    const located = locateNumbers(text, grounding([stale, absent]));
    expect(located.map((m) => text.slice(m.from, m.to))).toEqual(["2,586 km²"]);
    // A digit run inside a longer number is not a match for a shorter one.
    expect(locateNumbers(text, grounding([{ ...stale, text: "60", start: 99, end: 101 }]))).toEqual([]);
  });

  it("never marks code and never lets raw HTML through", () => {
    const text = "Value `348` in code, <b onclick=\"x()\">348</b> and 348 in text.";
    const g = grounding([num(text, "348", false, {}, 0), num(text, "348", false, {}, 1), num(text, "348", false, {}, 2)]);
    const out = html(text, g);
    expect(out).toContain("<code>348</code>");
    expect(out).not.toMatch(/onclick|<b>/);
    // The tags are dropped, the text between them is shown and so marked; code is not.
    expect(marks(out).map(([kind, t]) => [kind, t])).toEqual([
      ["unsupported", "348"],
      ["unsupported", "348"],
    ]);
  });

  it("names the tool and how the value matched in the title", () => {
    const n = { ...num("12 km", "12 km", true), toolName: "get_zonal_statistics", sourceValue: 12034.5, match: "converted m->km" };
    expect(markTitle(n)).toBe("From get_zonal_statistics: 12,034.5 (converted m->km)");
    expect(markTitle({ ...n, supported: false })).toBe(UNSUPPORTED_TITLE);
  });
});
