import { create } from "zustand";
import type { SessionSummary } from "../api/client";
import { chatReducer, type ChatAction } from "./chatReducer";
import { initialChatState, type ChatState } from "./chatTypes";
import { MODEL_KEY, SESSION_KEY, readStorage, writeStorage } from "./storage";

export interface ChatStore {
  chat: ChatState;
  sessions: SessionSummary[];
  sessionsError: string | null;
  /** Text in the message box (kept here so a message left in the queue comes back). */
  draft: string;
  /** The question being edited in the message box: sending replaces it and what came after it. */
  editing: string | null;
  /** The models a message may name, the default first (empty until the gateway said). */
  models: string[];
  /** The model picked for the next messages (kept across reloads); null: the default. */
  chosenModel: string | null;
  dispatch: (action: ChatAction) => void;
  setSessions: (sessions: SessionSummary[], error?: string | null) => void;
  setDraft: (draft: string) => void;
  setEditing: (messageId: string | null) => void;
  setModels: (models: string[]) => void;
  chooseModel: (model: string | null) => void;
}

export const useChatStore = create<ChatStore>()((set) => ({
  chat: { ...initialChatState, sessionId: readStorage(SESSION_KEY) },
  sessions: [],
  sessionsError: null,
  draft: "",
  editing: null,
  models: [],
  chosenModel: readStorage(MODEL_KEY),
  dispatch: (action) => set((s) => ({ chat: chatReducer(s.chat, action) })),
  setSessions: (sessions, error = null) => set({ sessions, sessionsError: error }),
  setDraft: (draft) => set({ draft }),
  setEditing: (editing) => set({ editing }),
  // A remembered choice the gateway no longer offers falls back to the default.
  setModels: (models) => set((s) => ({ models, chosenModel: s.chosenModel && models.includes(s.chosenModel) ? s.chosenModel : null })),
  chooseModel: (model) => {
    writeStorage(MODEL_KEY, model);
    set({ chosenModel: model });
  },
}));

// The conversation id survives reloads.
useChatStore.subscribe((state, prev) => {
  if (state.chat.sessionId !== prev.chat.sessionId) writeStorage(SESSION_KEY, state.chat.sessionId);
});
