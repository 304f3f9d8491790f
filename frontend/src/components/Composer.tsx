import { useEffect, useRef, useState } from "react";
import { describeDrawn } from "../map/drawing";
import { speechOutputSupported, startDictation, stopSpeaking, voiceInputSupported } from "../lib/speech";
import { isRunActive } from "../state/chatReducer";
import { sendMessage, stopRun } from "../state/chatController";
import { useChatStore } from "../state/chatStore";
import { useUiStore } from "../state/uiStore";
import { RunStatusLine } from "./RunStatusLine";

function ContextChips() {
  const center = useUiStore((s) => s.center);
  const zoom = useUiStore((s) => s.zoom);
  const feature = useUiStore((s) => s.selectedFeature);
  const drawn = useUiStore((s) => s.drawnGeometry);
  const setSelectedFeature = useUiStore((s) => s.setSelectedFeature);
  const setDrawnGeometry = useUiStore((s) => s.setDrawnGeometry);
  const featureName = feature?.properties && typeof feature.properties.name === "string" ? feature.properties.name : "feature";
  return (
    <div className="context-chips" aria-label="Map context sent with your message">
      <span className="chip" data-testid="context-center">
        Map {center.lat.toFixed(2)}, {center.lon.toFixed(2)} · z{zoom.toFixed(1)}
      </span>
      {feature ? (
        <span className="chip chip-feature" data-testid="context-feature">
          Selected: {featureName}
          <button type="button" className="chip-remove" aria-label={`Clear selection ${featureName}`} onClick={() => setSelectedFeature(null)}>
            ×
          </button>
        </span>
      ) : null}
      {drawn ? (
        <span className="chip chip-area" data-testid="context-area">
          {describeDrawn(drawn).text}
          <button
            type="button"
            className="chip-remove"
            aria-label={`Clear drawn ${describeDrawn(drawn).noun}`}
            onClick={() => setDrawnGeometry(null)}
          >
            ×
          </button>
        </span>
      ) : null}
    </div>
  );
}

export function Composer() {
  const draft = useChatStore((s) => s.draft);
  const setDraft = useChatStore((s) => s.setDraft);
  const setEditing = useChatStore((s) => s.setEditing);
  // Only while that question is still on screen (another conversation, or a new one, ends the edit).
  const editing = useChatStore((s) => (s.editing && s.chat.messages.some((m) => m.id === s.editing) ? s.editing : null));
  const running = useChatStore((s) => isRunActive(s.chat));
  const phase = useChatStore((s) => s.chat.run?.phase);
  const runId = useChatStore((s) => s.chat.run?.assistantId ?? null);
  // The run during which Enter was pressed: the hint stays until that run ends.
  const [heldDuring, setHeldDuring] = useState<string | null>(null);
  const held = running && heldDuring !== null && heldDuring === runId;
  const speakAnswers = useUiStore((s) => s.speakAnswers);
  const setSpeakAnswers = useUiStore((s) => s.setSpeakAnswers);
  const [listening, setListening] = useState(false);
  const [voiceError, setVoiceError] = useState<string | null>(null);
  const stopDictation = useRef<(() => void) | null>(null);
  const inputRef = useRef<HTMLTextAreaElement>(null);
  const canDictate = voiceInputSupported();
  const canSpeak = speechOutputSupported();

  useEffect(() => () => stopDictation.current?.(), []);

  const submit = () => {
    if (!draft.trim()) return;
    if (running) {
      setHeldDuring(runId);
      return;
    }
    const text = draft;
    setDraft("");
    setEditing(null);
    void sendMessage(text, editing ?? undefined);
  };

  const toggleDictation = () => {
    if (listening) {
      stopDictation.current?.();
      return;
    }
    setVoiceError(null);
    const prefix = draft ? `${draft.trimEnd()} ` : "";
    stopDictation.current = startDictation(
      (text) => setDraft(prefix + text),
      (error) => {
        setListening(false);
        stopDictation.current = null;
        if (error && error !== "aborted" && error !== "no-speech") setVoiceError(`Voice input stopped: ${error}`);
        inputRef.current?.focus();
      },
    );
    setListening(stopDictation.current !== null);
  };

  return (
    <form
      className="composer"
      aria-label="Ask the assistant"
      onSubmit={(e) => {
        e.preventDefault();
        submit();
      }}
    >
      <RunStatusLine place="composer" />
      <ContextChips />
      {editing ? (
        <p className="editing-note" role="status" data-testid="editing-note">
          Editing a question: sending replaces it and the answers after it.{" "}
          <button
            type="button"
            className="small"
            onClick={() => {
              setEditing(null);
              setDraft("");
            }}
          >
            Cancel edit
          </button>
        </p>
      ) : null}
      <div className="composer-row">
        <label htmlFor="composer-input" className="visually-hidden">
          Message
        </label>
        <textarea
          id="composer-input"
          ref={inputRef}
          value={draft}
          rows={2}
          placeholder="Ask about places, rasters, statistics…"
          aria-describedby="composer-hint"
          onChange={(e) => setDraft(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
              e.preventDefault();
              submit();
            }
          }}
        />
        <div className="composer-buttons">
          {canDictate ? (
            <button
              type="button"
              className={`icon-button ${listening ? "active" : ""}`}
              aria-pressed={listening}
              aria-label={listening ? "Stop voice input" : "Voice input"}
              title={listening ? "Stop voice input" : "Voice input"}
              onClick={toggleDictation}
            >
              <svg width="16" height="16" viewBox="0 0 24 24" aria-hidden="true" focusable="false">
                <path
                  fill="currentColor"
                  d="M12 14a3 3 0 0 0 3-3V5a3 3 0 0 0-6 0v6a3 3 0 0 0 3 3zm5-3a5 5 0 0 1-10 0H5a7 7 0 0 0 6 6.92V21h2v-3.08A7 7 0 0 0 19 11h-2z"
                />
              </svg>
            </button>
          ) : null}
          {/* Distinct keys: reusing one element would turn the clicked Leave queue into a submit
              button before the click's default action runs, sending the message straight back. */}
          {running ? (
            <button key="stop" type="button" className="danger" onClick={() => void stopRun()} disabled={phase === "cancelling"}>
              {phase === "queued" ? "Leave queue" : phase === "cancelling" ? "Stopping…" : "Stop"}
            </button>
          ) : (
            <button key="send" type="submit" className="primary" disabled={!draft.trim()}>
              Send
            </button>
          )}
        </div>
      </div>
      <div className="composer-options">
        <span id="composer-hint">Enter sends, Shift+Enter adds a line</span>
        {canSpeak ? (
          <label className="toggle">
            <input
              type="checkbox"
              checked={speakAnswers}
              onChange={(e) => {
                setSpeakAnswers(e.target.checked);
                if (!e.target.checked) stopSpeaking();
              }}
            />{" "}
            Read answers aloud
          </label>
        ) : null}
        {held ? (
          <span className="held-hint" role="status" data-testid="held-hint">
            Not sent yet: the assistant is still answering. Your message stays here; press Enter again when the
            answer is done, or Stop.
          </span>
        ) : null}
        {voiceError ? (
          <span className="voice-error" role="status">
            {voiceError}
          </span>
        ) : null}
      </div>
    </form>
  );
}
