import { useNow } from "../hooks/useNow";
import { isRunActive } from "../state/chatReducer";
import { useChatStore } from "../state/chatStore";
import { formatElapsed, runStatus } from "../state/runStatus";

/**
 * One line saying what the current run does and for how long: in the answer being
 * written (`feed`) and above the message box (`composer`). Only the composer's line is
 * a live region, and only its label is announced (the seconds would be read out every tick).
 */
export function RunStatusLine({ place, assistantId }: { place: "feed" | "composer"; assistantId?: string }) {
  const run = useChatStore((s) => (isRunActive(s.chat) ? s.chat.run : null));
  const now = useNow(run !== null);
  if (!run || (assistantId !== undefined && run.assistantId !== assistantId)) return null;
  const status = runStatus(run, now);
  const activity = formatElapsed(status.activityMs);
  const total = formatElapsed(status.totalMs);
  return (
    <div className={`run-status run-status-${place} run-status-${run.activity.kind}`} data-testid={`run-status-${place}`} data-activity={run.activity.kind}>
      <span className="spinner" aria-hidden="true" />
      <span className="run-status-text">
        <span className="run-status-label" {...(place === "composer" ? { role: "status" } : {})}>
          {status.label}
        </span>
        <span className="run-status-time" data-testid={`run-status-${place}-time`}>
          {" "}
          · {activity}
          {status.totalMs - status.activityMs >= 1000 ? ` (${total} in all)` : ""}
        </span>
        {status.detail && place === "feed" ? <span className="run-status-detail">{status.detail}</span> : null}
      </span>
    </div>
  );
}
