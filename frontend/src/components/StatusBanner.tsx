import { initialise, stopRun } from "../state/chatController";
import { useChatStore } from "../state/chatStore";

const TITLES: Record<string, string> = {
  queued: "Queued",
  unreachable: "Chat service unreachable",
  model_unavailable: "Model unavailable",
  cancelled: "Stopped",
  busy: "Busy",
  resuming: "Reconnecting",
  error: "Error",
  info: "Note",
};

/** One clear line about the state of the service: queued, unreachable, model down, cancelled… */
export function StatusBanner() {
  const notice = useChatStore((s) => s.chat.notice);
  const dispatch = useChatStore((s) => s.dispatch);
  if (!notice) return null;
  const urgent = notice.kind === "unreachable" || notice.kind === "model_unavailable" || notice.kind === "error";
  return (
    <div
      className={`status-banner status-${notice.kind}`}
      role={urgent ? "alert" : "status"}
      data-notice={notice.kind}
    >
      <div className="status-text">
        <strong>{TITLES[notice.kind] ?? "Note"}:</strong> {notice.text}
      </div>
      <div className="status-actions">
        {notice.kind === "queued" ? (
          <button type="button" onClick={() => void stopRun()}>
            Leave queue
          </button>
        ) : null}
        {notice.kind === "unreachable" ? (
          <button type="button" onClick={() => void initialise()}>
            Retry
          </button>
        ) : null}
        {notice.kind !== "queued" && notice.kind !== "resuming" ? (
          <button type="button" className="icon-button" aria-label="Dismiss" onClick={() => dispatch({ type: "dismiss_notice" })}>
            ×
          </button>
        ) : null}
      </div>
    </div>
  );
}
