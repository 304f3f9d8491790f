import { useStickToBottom } from "../hooks/useStickToBottom";
import { useChatStore } from "../state/chatStore";
import { ApprovalDialog } from "./ApprovalDialog";
import { Composer } from "./Composer";
import { ConversationExport } from "./ConversationExport";
import { MessageBubble } from "./MessageBubble";
import { StatusBanner } from "./StatusBanner";

function conversationVersion(messages: ReturnType<typeof useChatStore.getState>["chat"]["messages"]): number {
  let n = messages.length;
  for (const m of messages) n += m.content.length + m.activities.length + m.charts.length;
  return n;
}

export function ChatPanel() {
  const messages = useChatStore((s) => s.chat.messages);
  const title = useChatStore((s) => s.chat.title);
  const { ref, onScroll, showJump, jumpToBottom } = useStickToBottom<HTMLDivElement>(conversationVersion(messages));
  const lastAssistant = [...messages].reverse().find((m) => m.role === "assistant")?.id;

  return (
    <section className="chat-panel" aria-labelledby="chat-title">
      <div className="chat-header">
        <h2 id="chat-title" className="panel-title">
          {title || "Conversation"}
        </h2>
        <ConversationExport />
      </div>
      <StatusBanner />
      <div className="conversation" ref={ref} onScroll={onScroll} role="log" aria-label="Messages" tabIndex={0}>
        {messages.length === 0 ? (
          <div className="empty-conversation">
            <p>Ask about the data on the map, for example:</p>
            <ul>
              <li>“Which raster collections are there?”</li>
              <li>“Show the Luxembourg elevation model”</li>
              <li>“Chart the monthly precipitation at the selected point”</li>
            </ul>
            <p>Click a country or draw an area to ask about it.</p>
          </div>
        ) : (
          messages.map((m) => <MessageBubble key={m.id} message={m} latest={m.id === lastAssistant} />)
        )}
      </div>
      {showJump ? (
        <button type="button" className="jump-button" onClick={jumpToBottom}>
          Jump to latest ↓
        </button>
      ) : null}
      <Composer />
      <ApprovalDialog />
    </section>
  );
}
