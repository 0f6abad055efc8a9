// Reading a model's tool rounds for the trace (`RunStep.rounds`): what each round offered and
// asked for, in words, and the JSON it carried laid out to read.
import type { RunRound, RunStep, SentMessage } from '../api/types';

const str = (value: unknown, otherwise: string) => (typeof value === 'string' ? value : otherwise);

/** JSON text indented to read; text that is not JSON as it is (a tool may answer plain text). */
export function prettyJson(text: string): string {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null ? JSON.stringify(parsed, null, 2) : text;
  } catch {
    return text;
  }
}

/** A function the model was offered (OpenAI's `{type: "function", function: {...}}`). */
export interface OfferedTool {
  name: string;
  description: string;
  parameters: unknown;
}

export function offeredTools(round: RunRound): OfferedTool[] {
  return round.tools.map((tool) => {
    const fn = (tool.function ?? tool) as { name?: unknown; description?: unknown; parameters?: unknown };
    return { name: str(fn.name, '?'), description: str(fn.description, ''), parameters: fn.parameters ?? {} };
  });
}

/** What the model did in a round: "called lookup_order ×2, weather", or answered. */
export function roundSummary(round: RunRound): string {
  if (!round.tool_calls.length) return 'answered';
  const counts = new Map<string, number>();
  for (const call of round.tool_calls) counts.set(call.name, (counts.get(call.name) ?? 0) + 1);
  const failed = round.tool_calls.filter((c) => c.error).length;
  const named = [...counts].map(([name, n]) => (n > 1 ? `${name} ×${n}` : name)).join(', ');
  return `called ${named}${failed ? ` (${failed} failed)` : ''}`;
}

/** How many tools a step's model called in all its rounds. */
export function callCount(step: Pick<RunStep, 'rounds'>): number {
  return (step.rounds ?? []).reduce((n, round) => n + round.tool_calls.length, 0);
}

/** An assistant message's calls as the trace lists them (name and its arguments). */
export function callsIn(message: SentMessage): { id: string; name: string; arguments: string }[] {
  return (message.tool_calls ?? []).map((call) => {
    const fn = (call.function ?? {}) as { name?: unknown; arguments?: unknown };
    return { id: str(call.id, ''), name: str(fn.name, '?'), arguments: str(fn.arguments, JSON.stringify(fn.arguments ?? {})) };
  });
}
