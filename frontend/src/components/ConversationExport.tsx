import { useChatStore } from "../state/chatStore";
import { conversationMarkdown, exportFileName, type ExportedFigure } from "../lib/exportMarkdown";

function pictureOf(canvas: HTMLCanvasElement): string | null {
  try {
    return canvas.toDataURL("image/png");
  } catch {
    return null; // a tainted canvas
  }
}

/** The charts drawn in one answer, read from the page (a chart not drawn keeps its configuration). */
function figuresOf(messageId: string): ExportedFigure[] {
  const article = document.querySelector(`article[data-message-id="${CSS.escape(messageId)}"]`);
  if (!article) return [];
  return [...article.querySelectorAll<HTMLElement>("figure.chart")].map((figure) => {
    const canvas = figure.querySelector("canvas");
    return { title: figure.querySelector("figcaption")?.textContent ?? "", png: canvas ? pictureOf(canvas) : null, config: null };
  });
}

/** Downloads the conversation as a Markdown file with its figures. */
export function ConversationExport() {
  const messages = useChatStore((s) => s.chat.messages);
  const title = useChatStore((s) => s.chat.title);
  if (messages.length === 0) return null;
  return (
    <button
      type="button"
      className="small"
      title="Download this conversation as Markdown, with its charts"
      onClick={() => {
        // A new conversation has no title from the gateway yet: its first question names it.
        const name = title ?? messages.find((m) => m.role === "user")?.content.slice(0, 80) ?? null;
        const markdown = conversationMarkdown(name, messages, figuresOf);
        const url = URL.createObjectURL(new Blob([markdown], { type: "text/markdown;charset=utf-8" }));
        const link = document.createElement("a");
        link.href = url;
        link.download = exportFileName(name);
        document.body.append(link);
        link.click();
        link.remove();
        setTimeout(() => URL.revokeObjectURL(url), 1000);
      }}
    >
      Export
    </button>
  );
}
