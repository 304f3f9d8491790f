import type { AnswerGrounding, GroundedNumber } from "../state/chatTypes";

/**
 * Marks the numbers of an answer that the orchestrator checked against the run's
 * tool results. It works on the Markdown syntax tree (a remark plugin): text nodes
 * are split at the numbers' offsets and the pieces become `span` elements with a
 * class and a title, so no HTML string is ever built from model output.
 */

export const UNSUPPORTED_TITLE = "Not found in any tool result of this answer";

/** A checked number located in the Markdown source (UTF-16 offsets, as JavaScript strings index). */
export interface NumberMark {
  from: number;
  to: number;
  number: GroundedNumber;
}

/** The UTF-16 offset of every code-point boundary: `units[cp]` (the check counts code points). */
function codePointUnits(text: string): number[] {
  const units = [0];
  let unit = 0;
  for (const ch of text) {
    unit += ch.length;
    units.push(unit);
  }
  return units;
}

const WORD_CHAR = /[\p{L}\p{N}]/u;

function standsAlone(source: string, from: number, to: number): boolean {
  const before = source.slice(Math.max(0, from - 1), from);
  const after = source.slice(to, to + 1);
  return !WORD_CHAR.test(before) && !WORD_CHAR.test(after) && before !== "." && before !== ",";
}

function overlaps(marks: NumberMark[], from: number, to: number): boolean {
  return marks.some((m) => m.from < to && from < m.to);
}

/** Where `text` occurs as a whole number, nearest to `near`, outside the marks so far; -1 if nowhere. */
function nearestOccurrence(source: string, text: string, near: number, marks: NumberMark[]): number {
  let best = -1;
  for (let at = source.indexOf(text); at >= 0; at = source.indexOf(text, at + 1)) {
    const end = at + text.length;
    if (!standsAlone(source, at, end) || overlaps(marks, at, end)) continue;
    if (best < 0 || Math.abs(at - near) < Math.abs(best - near)) best = at;
  }
  return best;
}

/**
 * Finds each checked number in the answer. The offsets are trusted when the text
 * there is the number's own; otherwise (an answer repaired or re-flowed after the
 * check) the number's text is looked for nearest to where it was said to be.
 * Numbers found nowhere are left unmarked (the summary line still counts them).
 */
export function locateNumbers(source: string, grounding: AnswerGrounding): NumberMark[] {
  const units = codePointUnits(source);
  const last = units.length - 1;
  const marks: NumberMark[] = [];
  for (const number of grounding.numbers) {
    if (!number.text) continue;
    let from = -1;
    if (number.start >= 0 && number.end > number.start && number.end <= last) {
      const a = units[number.start];
      if (source.slice(a, units[number.end]) === number.text && !overlaps(marks, a, units[number.end])) from = a;
    }
    if (from < 0) {
      const near = units[Math.min(Math.max(number.start, 0), last)];
      from = nearestOccurrence(source, number.text, near, marks);
    }
    if (from < 0) continue;
    marks.push({ from, to: from + number.text.length, number });
  }
  return marks.sort((a, b) => a.from - b.from);
}

function formatValue(value: number): string {
  return value.toLocaleString("en-US", { maximumFractionDigits: 6 });
}

/** The hover text of a checked number. */
export function markTitle(number: GroundedNumber): string {
  if (!number.supported) return UNSUPPORTED_TITLE;
  const tool = number.toolName || "a tool result";
  const how = number.match ? ` (${number.match})` : "";
  return `From ${tool}: ${formatValue(number.sourceValue)}${how}`;
}

/** The part of an mdast node this plugin reads or writes. */
interface MdNode {
  type: string;
  value?: string;
  children?: MdNode[];
  position?: { start: { offset?: number }; end: { offset?: number } };
  data?: Record<string, unknown>;
}

// Code keeps its digits as written: marks there would change what a reader copies.
const SKIPPED = new Set(["code", "inlineCode", "html"]);

/**
 * For each character of a text node's value, its offset in the source. The value
 * differs from the source where Markdown drops characters (escapes, entities,
 * indentation of continued lines), so the two are walked side by side.
 */
function sourceOffsets(value: string, source: string, start: number, end: number): number[] {
  const offsets: number[] = [];
  let j = start;
  for (let i = 0; i < value.length; i++) {
    while (j < end && source[j] !== value[i]) j++;
    offsets.push(j < end ? j++ : -1);
  }
  return offsets;
}

function markNode(mark: NumberMark, text: string, isEnd: boolean): MdNode {
  const supported = mark.number.supported;
  const classes = ["grounded-number", supported ? "grounded-supported" : "grounded-unsupported"];
  if (isEnd) classes.push("grounded-end");
  return {
    type: "groundedNumber",
    children: [{ type: "text", value: text }],
    data: {
      hName: "span",
      hProperties: {
        className: classes,
        title: markTitle(mark.number),
        dataGrounding: supported ? "supported" : "unsupported",
        ...(supported && mark.number.toolName ? { dataTool: mark.number.toolName } : {}),
      },
    },
  };
}

function splitText(node: MdNode, source: string, marks: NumberMark[]): MdNode[] {
  const start = node.position?.start.offset;
  const end = node.position?.end.offset;
  const value = node.value ?? "";
  if (start === undefined || end === undefined || !value) return [node];
  const hit = marks.filter((m) => m.from < end && start < m.to);
  if (hit.length === 0) return [node];
  const offsets = sourceOffsets(value, source, start, end);
  const markAt = (i: number) => hit.find((m) => offsets[i] >= m.from && offsets[i] < m.to) ?? null;
  const out: MdNode[] = [];
  let i = 0;
  while (i < value.length) {
    const mark = markAt(i);
    let j = i + 1;
    while (j < value.length && markAt(j) === mark) j++;
    const text = value.slice(i, j);
    out.push(mark ? markNode(mark, text, offsets[j - 1] === mark.to - 1) : { type: "text", value: text });
    i = j;
  }
  return out;
}

function walk(node: MdNode, source: string, marks: NumberMark[]): void {
  if (!node.children) return;
  node.children = node.children.flatMap((child) => {
    if (child.type === "text") return splitText(child, source, marks);
    if (!SKIPPED.has(child.type)) walk(child, source, marks);
    return [child];
  });
}

/** remark plugin: `[remarkGroundedNumbers, { grounding }]`. The source is the file being rendered. */
export function remarkGroundedNumbers(options: { grounding: AnswerGrounding }) {
  return (tree: MdNode, file: { value: unknown }): void => {
    const source = String(file.value ?? "");
    const marks = locateNumbers(source, options.grounding);
    if (marks.length > 0) walk(tree, source, marks);
  };
}
