import { useStickToBottom } from "../hooks/useStickToBottom";
import type { Activity } from "../state/chatTypes";

function argsSummary(args: Activity["arguments"]): string {
  if (!args) return "";
  const text = JSON.stringify(args);
  return text.length > 160 ? `${text.slice(0, 157)}…` : text;
}

function ActivityLine({ activity }: { activity: Activity }) {
  switch (activity.kind) {
    case "thinking":
      return (
        <li className="activity activity-thinking">
          <span className="activity-label">Thinking ({activity.step})</span>{" "}
          <em className="thinking-text">{activity.text}</em>
        </li>
      );
    case "tool": {
      const name = activity.toolName ?? "tool";
      const args = argsSummary(activity.arguments);
      if (activity.status === "running") {
        return (
          <li className="activity activity-tool running">
            <span className="spinner" aria-hidden="true" /> Calling <code>{name}</code>
            {args ? <span className="activity-args"> {args}</span> : null}
          </li>
        );
      }
      if (activity.status === "error") {
        return (
          <li className="activity activity-error" data-tool={name}>
            <code>{name}</code> failed{activity.durationMs !== undefined ? ` (${activity.durationMs} ms)` : ""}
            {activity.text ? `: ${activity.text}` : ""}
          </li>
        );
      }
      return (
        <li className="activity activity-tool done" data-tool={name}>
          <span aria-hidden="true">✓ </span>
          <code>{name}</code>{" "}
          {activity.durationMs !== undefined ? `completed (${activity.durationMs} ms)` : "called"}
          {activity.truncated ? " (result shortened)" : ""}
          {activity.result ? (
            <details className="activity-result">
              <summary>Result</summary>
              <pre>{activity.result}</pre>
            </details>
          ) : null}
        </li>
      );
    }
    case "approval":
      return (
        <li className={`activity activity-approval ${activity.status ?? ""}`}>
          {activity.status === "pending"
            ? "Waiting for your approval to run "
            : activity.status === "approved"
              ? "You approved "
              : "You rejected "}
          <code>{activity.toolName}</code>
        </li>
      );
    case "frontend":
      return (
        <li className="activity activity-frontend" data-tool={activity.toolName}>
          {activity.toolName === "generate_chart" ? "Drew a chart" : <>Map: <code>{activity.toolName}</code></>}
          {activity.toolName !== "generate_chart" && activity.arguments ? (
            <span className="activity-args"> {argsSummary(activity.arguments)}</span>
          ) : null}
        </li>
      );
    case "error":
      return <li className="activity activity-error">Error: {activity.text}</li>;
    default:
      return <li className="activity">{activity.text}</li>;
  }
}

/** The live log of what the agent is doing: thoughts, tool calls with durations, errors. */
export function ActivityFeed({ activities, live }: { activities: Activity[]; live: boolean }) {
  const version = activities.reduce((n, a) => n + (a.text?.length ?? 0) + 1 + (a.status === "running" ? 0 : 1), 0);
  const { ref, onScroll, showJump, jumpToBottom } = useStickToBottom<HTMLDivElement>(version);
  if (activities.length === 0) return null;
  return (
    <div className="activity-feed-wrap">
      <div
        ref={ref}
        onScroll={onScroll}
        className="activity-feed"
        role="log"
        aria-live={live ? "polite" : "off"}
        aria-label="Agent activity"
        tabIndex={0}
      >
        <ol className="activity-list">
          {activities.map((a) => (
            <ActivityLine key={a.id} activity={a} />
          ))}
        </ol>
      </div>
      {showJump ? (
        <button type="button" className="jump-button small" onClick={jumpToBottom}>
          Latest activity ↓
        </button>
      ) : null}
    </div>
  );
}
