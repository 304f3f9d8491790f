import { Suspense, lazy } from "react";
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

export function MessageBubble({ message, latest = false }: { message: UiMessage; latest?: boolean }) {
  const showActivity = useUiStore((s) => s.panels.activity);
  const followed = useChatStore((s) => s.chat.run?.assistantId === message.id && s.chat.run.phase !== "finished");
  if (message.role === "user") {
    return (
      <article className="message message-user" aria-label="You said">
        <p className="message-text">{message.content}</p>
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
    </article>
  );
}
