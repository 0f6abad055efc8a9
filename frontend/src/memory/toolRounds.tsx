// Tool rounds in a history as the memory and participant pages show them (docs/memory.md#tool-rounds).
import type { MemoryMessage, MemoryMessageInput } from '../api/types';

/** A message as the editor edits it: its tool-round fields go back unchanged (a call and its results must stay paired). */
export function editable({ role, content, tool_calls, tool_call_id }: MemoryMessage): MemoryMessageInput {
  return { role, content, ...(tool_calls?.length ? { tool_calls } : {}), ...(tool_call_id ? { tool_call_id } : {}) };
}

/** The calls an assistant message makes, as one line each: ``name(arguments)``. */
export function callLines(message: Pick<MemoryMessage, 'tool_calls'>): string[] {
  return (message.tool_calls ?? []).map((call) => {
    const fn = (call.function ?? {}) as { name?: unknown; arguments?: unknown };
    return `${typeof fn.name === 'string' ? fn.name : 'a tool'}(${typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? {})})`;
  });
}

export function ToolRoundPart({ message }: { message: Pick<MemoryMessage, 'tool_calls' | 'tool_call_id'> }) {
  const calls = callLines(message);
  if (calls.length) return <div className="memory-tool-calls">{calls.map((line, i) => <code key={i} className="tool-call">→ {line}</code>)}</div>;
  if (message.tool_call_id) return <div className="muted small">result of call <code>{message.tool_call_id}</code></div>;
  return null;
}
