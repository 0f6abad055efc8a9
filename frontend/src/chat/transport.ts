// The editor's test chat is the embeddable widget's own chat view (frontend/widget), so what the
// owner tests is what visitors get. These are the transports it runs on in the editor: the draft's
// event stream, the manual trigger, and a gate that saves the draft before each message.
import { streamTransport, type Transport, type TransportListener } from '../../widget/src/embed';
import { api, ApiError, readCookie } from '../api/client';

export { mountChat } from '../../widget/src/embed';
export type { ChatHandle, ServerEvent, Transport } from '../../widget/src/embed';

/** The longest message the owner's chat endpoints take (StreamInput / ChatInput in workflows/api/). */
export const OWNER_MAX_MESSAGE = 100_000;

/** `POST /api/workflows/{id}/chat/stream/` (Server-Sent Events) against the draft, with the session's CSRF header. */
export function draftTransport(workflowId: number, participant?: string): Transport {
  return streamTransport({
    url: `/api/workflows/${workflowId}/chat/stream/`,
    // Who the test chat talks as: memory keyed by participant follows them across conversations.
    body: participant ? { participant } : undefined,
    messagesUrl: (thread) => `/api/threads/${encodeURIComponent(thread)}/messages/`,
    runUrl: (run) => `/api/runs/${run}/`,
    headers: (): Record<string, string> => {
      const token = readCookie('csrftoken');
      return token ? { 'X-CSRFToken': token } : {};
    },
  });
}

const issuesOf = (error: unknown) => (error instanceof ApiError && error.issues.length ? { errors: error.issues } : {});

/** The manual trigger (`POST /api/workflows/{id}/run/`), answered once the run is over and told
 * to the chat as that run's events. Each run stands alone (no thread). */
export function manualTransport(workflowId: number): Transport {
  let listener: TransportListener;
  return {
    start(value) {
      listener = value;
      listener.status('online');
    },
    send({ text, clientId }) {
      api.runManual(workflowId, text).then(
        (reply) => {
          listener.event({ type: 'accepted', data: { run: reply.run, client_id: clientId } });
          if (reply.status === 'failed') listener.event({ type: 'run.failed', data: { run: reply.run, error: reply.error || 'The run failed.' } });
          else listener.event({ type: 'run.finished', data: { run: reply.run, reply: reply.reply, warnings: reply.warnings } });
        },
        (error: Error) => listener.event({ type: 'error', data: { code: 'failed', message: error.message, client_id: clientId, ...issuesOf(error) } }),
      );
    },
    sync(thread) {
      listener.event({ type: 'history', data: { thread, messages: [], pending: null } });
    },
    stop() {},
  };
}

/** Runs `before` ahead of each message (e.g. save the draft); a problem it returns refuses the
 * message, shown in the chat like any refusal. */
export function gatedTransport(inner: Transport, before: () => Promise<string | null>): Transport {
  let listener: TransportListener;
  return {
    start(value) {
      listener = value;
      inner.start(value);
    },
    send(message) {
      before().then(
        (problem) => {
          if (problem) listener.event({ type: 'error', data: { code: 'refused', message: problem, client_id: message.clientId } });
          else inner.send(message);
        },
        (error: Error) => listener.event({ type: 'error', data: { code: 'refused', message: error.message, client_id: message.clientId } }),
      );
    },
    sync: (thread, after) => inner.sync(thread, after),
    stop: () => inner.stop(),
  };
}
