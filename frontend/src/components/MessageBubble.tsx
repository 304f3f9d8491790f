import { Suspense, lazy, useEffect, useState } from "react";
import { copyText } from "../lib/clipboard";
import { isRunActive } from "../state/chatReducer";
import { sendMessage } from "../state/chatController";
import { useChatStore } from "../state/chatStore";
import { groundingSummary } from "../state/grounding";
import { useUiStore } from "../state/uiStore";
import type { UiMessage } from "../state/chatTypes";
import { ActivityFeed } from "./ActivityFeed";
import { RunStatusLine } from "./RunStatusLine";
import { SafeMarkdown } from "./SafeMarkdown";

const ChartView = lazy(() => import("./ChartView"));

const STATUS_NOTE: Partial<Record<UiMessage["status"], string>> = {
  cancelled: "Stopped",
  step_budget: "Stopped after the step limit",
  error: "Failed",
};

function CopyButton({ text }: { text: string }) {
  const [state, setState] = useState<"idle" | "copied" | "failed">("idle");
  useEffect(() => {
    if (state === "idle") return;
    const timer = setTimeout(() => setState("idle"), 2000);
    return () => clearTimeout(timer);
  }, [state]);
  return (
    <button
      type="button"
      className="small"
      aria-label="Copy answer"
      onClick={() => void copyText(text).then((ok) => setState(ok ? "copied" : "failed"))}
    >
      {state === "copied" ? "Copied" : state === "failed" ? "Copy failed" : "Copy"}
    </button>
  );
}

/** The question this answer replied to. */
function questionBefore(answerId: string): UiMessage | null {
  const messages = useChatStore.getState().chat.messages;
  const at = messages.findIndex((m) => m.id === answerId);
  for (let i = at - 1; i >= 0; i--) if (messages[i].role === "user") return messages[i];
  return null;
}

/** Puts a question back into the message box to be changed and sent again in its place. */
function editAndResend(question: UiMessage): void {
  const text = question.content;
  useChatStore.getState().setDraft(text);
  useChatStore.getState().setEditing(question.id);
  const input = document.getElementById("composer-input");
  if (input instanceof HTMLTextAreaElement) {
    input.focus();
    input.setSelectionRange(text.length, text.length);
  }
}

export function MessageBubble({ message, latest = false }: { message: UiMessage; latest?: boolean }) {
  const showActivity = useUiStore((s) => s.panels.activity);
  const running = useChatStore((s) => isRunActive(s.chat));
  const followed = useChatStore((s) => s.chat.run?.assistantId === message.id && s.chat.run.phase !== "finished");
  if (message.role === "user") {
    return (
      <article className="message message-user" aria-label="You said" data-message-id={message.id}>
        <p className="message-text">{message.content}</p>
        <div className="message-actions">
          <button
            type="button"
            className="small"
            aria-label="Edit and resend"
            title="Put this question in the message box to change and send it again in its place"
            onClick={() => editAndResend(message)}
          >
            Edit
          </button>
        </div>
      </article>
    );
  }
  const streaming = message.status === "streaming";
  const note = STATUS_NOTE[message.status];
  const checked = message.grounding && message.content ? groundingSummary(message.grounding) : null;
  return (
    <article
      className={`message message-assistant status-${message.status}`}
      aria-label="Assistant answer"
      aria-busy={streaming}
      data-status={message.status}
      data-message-id={message.id}
    >
      {showActivity && message.activities.length > 0 ? (
        streaming ? (
          <ActivityFeed activities={message.activities} live />
        ) : (
          <details className="activity-details" open={latest}>
            <summary>Activity ({message.activities.length})</summary>
            <ActivityFeed activities={message.activities} live={false} />
          </details>
        )
      ) : null}
      {message.content ? (
        <div className="answer" data-testid="answer">
          <SafeMarkdown text={message.content} grounding={message.grounding} />
        </div>
      ) : null}
      {streaming ? (
        followed ? (
          <RunStatusLine place="feed" assistantId={message.id} />
        ) : (
          <p className="answer-pending">
            <span className="spinner" aria-hidden="true" /> Working on it…
          </p>
        )
      ) : null}
      {checked ? (
        <p
          className={`grounding-summary${checked.warning ? " grounding-warning" : ""}`}
          data-testid="grounding-summary"
          title="Numbers of this answer compared with the results of the tools it called"
        >
          {checked.warning ? <span aria-hidden="true">⚠ </span> : null}
          {checked.text}
        </p>
      ) : null}
      {message.charts.length > 0 ? (
        <Suspense fallback={<p>Loading chart…</p>}>
          {message.charts.map((c) => (
            <ChartView key={c.id} config={c.config} />
          ))}
        </Suspense>
      ) : null}
      {message.error && message.status === "error" ? (
        <p className="message-error" role="alert">
          {message.error.message || message.error.code}
        </p>
      ) : null}
      {note && message.status !== "error" ? <p className="message-note">{note}</p> : null}
      {!streaming ? (
        <div className="message-actions">
          {message.content ? <CopyButton text={message.content} /> : null}
          {latest && !running ? (
            <button
              type="button"
              className="small"
              title="Ask the same question again; the new answer replaces this one"
              onClick={() => {
                const question = questionBefore(message.id);
                if (question) void sendMessage(question.content, question.id);
              }}
            >
              Regenerate
            </button>
          ) : null}
        </div>
      ) : null}
    </article>
  );
}
