import { ACTIVE_RUN_KEY, readStorage, writeStorage } from "./storage";

/** The run this tab follows, remembered until it ends so that a reload follows it again. */
export interface ActiveRun {
  runId: string;
  sessionId: string;
  question: string;
}

export function readActiveRun(): ActiveRun | null {
  try {
    const value: unknown = JSON.parse(readStorage(ACTIVE_RUN_KEY) ?? "null");
    if (!value || typeof value !== "object") return null;
    const { runId, sessionId, question } = value as Record<string, unknown>;
    return typeof runId === "string" && typeof sessionId === "string" && typeof question === "string" ? { runId, sessionId, question } : null;
  } catch {
    return null;
  }
}

export function rememberActiveRun(active: ActiveRun): void {
  writeStorage(ACTIVE_RUN_KEY, JSON.stringify(active));
}

/** Forgets the remembered run once it is over (or no longer followed). */
export function forgetActiveRun(runId: string | null): void {
  const active = readActiveRun();
  if (active && (runId === null || active.runId === runId)) writeStorage(ACTIVE_RUN_KEY, null);
}
