/** localStorage that degrades to nothing where storage is blocked (private modes, sandboxed frames). */

export function readStorage(key: string): string | null {
  try {
    return globalThis.localStorage?.getItem(key) ?? null;
  } catch {
    return null;
  }
}

export function writeStorage(key: string, value: string | null): void {
  try {
    if (value === null) globalThis.localStorage?.removeItem(key);
    else globalThis.localStorage?.setItem(key, value);
  } catch {
    // Storage unavailable: the session simply is not remembered.
  }
}

export const SESSION_KEY = "stacgis.sessionId";
/** The model chosen in the picker. */
export const MODEL_KEY = "stacgis.model";
/** The run this tab follows ({runId, sessionId, question}), so a reload can follow it again. */
export const ACTIVE_RUN_KEY = "stacgis.activeRun";
