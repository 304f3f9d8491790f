import type { UiMessage } from "../state/chatTypes";

/** A chart of an answer as exported: its picture (a PNG data URL) when it was drawn, else its configuration. */
export interface ExportedFigure {
  title: string;
  png: string | null;
  config: unknown;
}

function toolLine(a: UiMessage["activities"][number]): string | null {
  if (a.kind !== "tool" && a.kind !== "frontend") return null;
  const name = a.toolName ?? "tool";
  if (a.kind === "frontend") return a.toolName === "generate_chart" ? null : `- map: \`${name}\` ${JSON.stringify(a.arguments ?? {})}`;
  const how = a.status === "error" ? `failed${a.text ? `: ${a.text}` : ""}` : a.durationMs !== undefined ? `${a.durationMs} ms` : "called";
  return `- \`${name}\` ${JSON.stringify(a.arguments ?? {})} (${how})`;
}

/** The conversation as Markdown: each turn, the tools each answer called, and its figures. */
export function conversationMarkdown(
  title: string | null,
  messages: UiMessage[],
  figures: (messageId: string) => ExportedFigure[],
  exportedAt: Date = new Date(),
): string {
  const out: string[] = [`# ${title?.trim() || "Conversation"}`, "", `_Exported ${exportedAt.toISOString()}_`, ""];
  for (const m of messages) {
    if (m.role === "user") {
      out.push("## You", "", m.content, "");
      continue;
    }
    out.push("## Assistant", "");
    const tools = m.activities.map(toolLine).filter((l): l is string => l !== null);
    if (tools.length > 0) out.push("Tools called:", "", ...tools, "");
    if (m.content) out.push(m.content, "");
    if (m.status !== "complete") out.push(`_(${m.status === "streaming" ? "still being written" : m.status.replace("_", " ")})_`, "");
    const drawn = figures(m.id);
    const shown = drawn.length > 0 ? drawn : m.charts.map((c) => ({ title: "", png: null, config: c.config }));
    shown.forEach((f, i) => {
      const label = f.title || `Figure ${i + 1}`;
      if (f.png) out.push(`![${label}](${f.png})`, "");
      else out.push(`${label}:`, "", "```json", JSON.stringify(f.config, null, 2), "```", "");
    });
  }
  return out.join("\n");
}

/** A file name for the export: the title's words, and the date. */
export function exportFileName(title: string | null, at: Date = new Date()): string {
  const slug = (title ?? "")
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 60);
  return `stacgis-${slug || "conversation"}-${at.toISOString().slice(0, 10)}.md`;
}

/** Case- and accent-insensitive match of a conversation title. */
export function titleMatches(title: string | null, query: string): boolean {
  const fold = (s: string) => s.normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase();
  const q = fold(query.trim());
  return q === "" || fold(title ?? "Untitled conversation").includes(q);
}
