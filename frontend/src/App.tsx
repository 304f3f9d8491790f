import { useEffect } from "react";
import { ChatPanel } from "./components/ChatPanel";
import { SessionsSidebar } from "./components/SessionsSidebar";
import { MapView } from "./map/MapView";
import { initialise } from "./state/chatController";
import { useChatStore } from "./state/chatStore";
import { useUiStore } from "./state/uiStore";

/** Which model answers the next message, when the gateway offers more than one. */
function ModelPicker({ models }: { models: string[] }) {
  const chosen = useChatStore((s) => s.chosenModel);
  const chooseModel = useChatStore((s) => s.chooseModel);
  return (
    <label className="model-picker" data-testid="model" title="Model answering your next messages">
      <span className="visually-hidden">Model</span>
      <select
        value={chosen && models.includes(chosen) ? chosen : models[0]}
        onChange={(e) => chooseModel(e.target.value === models[0] ? null : e.target.value)}
      >
        {models.map((name, index) => (
          <option key={name} value={name}>
            {index === 0 ? `${name} (default)` : name}
          </option>
        ))}
      </select>
    </label>
  );
}

function Header() {
  const model = useChatStore((s) => s.chat.model);
  const provider = useChatStore((s) => s.chat.provider);
  const models = useChatStore((s) => s.models);
  const panels = useUiStore((s) => s.panels);
  const setPanel = useUiStore((s) => s.setPanel);
  return (
    <header className="topbar">
      <h1 className="brand">stacgis</h1>
      {models.length > 1 ? (
        <ModelPicker models={models} />
      ) : (
        <span className="model-badge" data-testid="model" title="Model answering">
          {model ? `Model: ${model}${provider ? ` (${provider})` : ""}` : "Model: …"}
        </span>
      )}
      <div className="topbar-buttons">
        <button
          type="button"
          aria-expanded={panels.sessions}
          aria-controls="sessions-panel"
          onClick={() => setPanel("sessions")}
        >
          Conversations
        </button>
        <button
          type="button"
          aria-pressed={panels.activity}
          onClick={() => setPanel("activity")}
          title="Show the agent's steps in answers"
        >
          Activity
        </button>
        <button type="button" aria-expanded={panels.chat} aria-controls="chat-panel" onClick={() => setPanel("chat")}>
          Chat
        </button>
      </div>
    </header>
  );
}

export function App() {
  const panels = useUiStore((s) => s.panels);
  useEffect(() => {
    void initialise();
  }, []);
  return (
    <div className="app">
      <Header />
      <main className="workspace">
        <MapView />
        <div id="sessions-panel" className="panel-slot sessions-slot" hidden={!panels.sessions}>
          <SessionsSidebar />
        </div>
        <div id="chat-panel" className="panel-slot chat-slot" hidden={!panels.chat}>
          <ChatPanel />
        </div>
      </main>
    </div>
  );
}
