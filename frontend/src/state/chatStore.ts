import { create } from "zustand";
import type { SessionSummary } from "../api/client";
import { chatReducer, type ChatAction } from "./chatReducer";
import { initialChatState, type ChatState } from "./chatTypes";
import { SESSION_KEY, readStorage, writeStorage } from "./storage";

export interface ChatStore {
  chat: ChatState;
  sessions: SessionSummary[];
  sessionsError: string | null;
  /** Text in the message box (kept here so a message left in the queue comes back). */
  draft: string;
  dispatch: (action: ChatAction) => void;
  setSessions: (sessions: SessionSummary[], error?: string | null) => void;
  setDraft: (draft: string) => void;
}

export const useChatStore = create<ChatStore>()((set) => ({
  chat: { ...initialChatState, sessionId: readStorage(SESSION_KEY) },
  sessions: [],
  sessionsError: null,
  draft: "",
  dispatch: (action) => set((s) => ({ chat: chatReducer(s.chat, action) })),
  setSessions: (sessions, error = null) => set({ sessions, sessionsError: error }),
  setDraft: (draft) => set({ draft }),
}));

// The conversation id survives reloads.
useChatStore.subscribe((state, prev) => {
  if (state.chat.sessionId !== prev.chat.sessionId) writeStorage(SESSION_KEY, state.chat.sessionId);
});
