import { useEffect, useRef, useState } from "react";
import { answerApproval } from "../state/chatController";
import { useChatStore } from "../state/chatStore";
import { SafeMarkdown } from "./SafeMarkdown";

/** Asks the user before an approval-gated tool runs; shows the tool and its arguments. */
export function ApprovalDialog() {
  const approval = useChatStore((s) => s.chat.approval);
  const dialogRef = useRef<HTMLDialogElement>(null);
  const approveRef = useRef<HTMLButtonElement>(null);
  const [reason, setReason] = useState("");
  const [sending, setSending] = useState(false);
  const [now, setNow] = useState(() => Date.now());

  useEffect(() => {
    const dialog = dialogRef.current;
    if (!dialog) return;
    if (approval && !dialog.open) {
      dialog.showModal();
      // showModal focuses the first focusable element, which is the scrollable arguments box:
      // start on Approve so Enter answers, as the dialog's default action.
      approveRef.current?.focus();
    }
    if (!approval && dialog.open) dialog.close();
  }, [approval]);

  useEffect(() => {
    if (!approval?.timeoutSeconds) return;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [approval]);

  const answer = async (approved: boolean) => {
    if (!approval) return;
    setSending(true);
    const ok = await answerApproval(approval.approvalId, approved, reason.trim() || null);
    setSending(false);
    if (ok) setReason("");
  };

  const remaining = approval?.timeoutSeconds
    ? Math.max(0, Math.ceil(approval.timeoutSeconds - (now - approval.receivedAt) / 1000))
    : null;

  return (
    <dialog
      ref={dialogRef}
      className="approval-dialog"
      aria-labelledby="approval-title"
      aria-describedby="approval-desc"
      onCancel={(e) => e.preventDefault()}
    >
      {approval ? (
        <form
          method="dialog"
          onSubmit={(e) => {
            e.preventDefault();
            void answer(true);
          }}
        >
          <h2 id="approval-title">Allow this action?</h2>
          <p id="approval-desc">
            The assistant wants to run <code data-testid="approval-tool">{approval.toolName}</code>
            {approval.server ? <> on <strong>{approval.server}</strong></> : null} with these arguments:
          </p>
          {approval.description ? (
            <div className="approval-description" data-testid="approval-description">
              <SafeMarkdown text={approval.description} />
            </div>
          ) : null}
          {/* Focusable so the keyboard can scroll long arguments. */}
          <pre className="approval-args" data-testid="approval-args" tabIndex={0} aria-label="Arguments">
            {JSON.stringify(approval.arguments, null, 2)}
          </pre>
          {remaining !== null ? (
            <p className="approval-timeout">It is rejected automatically in {remaining} s.</p>
          ) : null}
          <label htmlFor="approval-reason">Reason (optional, sent to the assistant)</label>
          <textarea
            id="approval-reason"
            value={reason}
            rows={2}
            onChange={(e) => setReason(e.target.value)}
          />
          <div className="dialog-actions">
            <button type="button" className="danger" disabled={sending} onClick={() => void answer(false)}>
              Reject
            </button>
            <button type="submit" className="primary" disabled={sending} ref={approveRef}>
              Approve
            </button>
          </div>
        </form>
      ) : null}
    </dialog>
  );
}
