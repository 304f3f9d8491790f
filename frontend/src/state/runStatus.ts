import type { RunState } from "./chatTypes";

/** The status line of a run: what it does now, since when, and since when it runs at all. */
export interface RunStatus {
  label: string;
  /** A second line of explanation, when the label alone could mislead. */
  detail: string | null;
  /** Elapsed time of the current activity, and of the whole run, in ms. */
  activityMs: number;
  totalMs: number;
}

export function runStatus(run: RunState, now: number): RunStatus {
  const a = run.activity;
  let label: string;
  let detail: string | null = null;
  if (run.phase === "resuming") label = "Reconnecting to the answer";
  else if (run.phase === "cancelling") label = "Stopping";
  else {
    switch (a.kind) {
      case "sending":
        label = "Sending your message";
        break;
      case "queued":
        label = "Waiting for a free model slot";
        detail = "Every slot is answering someone else; your message goes as soon as one frees.";
        break;
      case "model":
        label = "Waiting for the model";
        detail = "It is reading the prompt, or still busy with another request.";
        break;
      case "model_retry":
        label = "Waiting for the model to come back";
        break;
      case "thinking":
        label = "Thinking";
        break;
      case "tool":
        label = `Calling ${a.toolName ?? "a tool"}`;
        break;
      case "approval":
        label = `Waiting for your approval of ${a.toolName ?? "a tool"}`;
        break;
      case "writing":
        label = "Writing the answer";
        break;
    }
  }
  return { label, detail, activityMs: Math.max(0, now - a.since), totalMs: Math.max(0, now - run.startedAt) };
}

/** "7 s", "2 min 05 s". */
export function formatElapsed(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  return `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, "0")} s`;
}
