import { beforeEach, describe, expect, it } from 'vitest';
import type { RunRound, ToolCall } from '../../api/types';
import { nodeTypes, run, runStep, workflow } from '../../test/fixtures';
import { useEditor } from '../store';
import { runStateOf } from './runState';

const s = () => useEditor.getState();

beforeEach(() => {
  s().setSpecs(nodeTypes);
  s().load(workflow());
});

describe('opening a workflow', () => {
  it('starts every slice afresh, but keeps the clipboard for pasting into the new one', () => {
    s().addNode('trigger.chat', { x: 0, y: 0 });
    s().addNode('llm', { x: 100, y: 0 });
    s().selectAll();
    s().copySelection();
    s().paste();
    s().undo();
    s().setIssues([{ node: 'llm_1', field: 'model', message: 'required' }]);
    s().showRun(run({ id: 9, steps: [runStep('llm_1', 'llm')] }));
    const clipboard = s().clipboard;

    const issues = [{ node: null, field: null, message: 'no trigger' }];
    s().load(workflow({ id: 8, name: 'Other', revision: 11, errors: issues, unpublished_changes: true }));
    expect(s()).toMatchObject({
      workflowId: 8,
      name: 'Other',
      revision: 11,
      unpublishedChanges: true,
      nodes: [],
      edges: [],
      issues,
      past: [],
      future: [],
      lastEdit: null,
      dragStart: null,
      changeCount: 0,
      savedCount: 0,
      saving: false,
      saveError: null,
      conflict: null,
      runState: {},
      lastRunId: null,
      pasteCount: 0,
      clipboard,
    });

    expect(s().paste()).toBe(2);
    expect(s().nodes.map((n) => [n.id, n.position])).toEqual([
      ['chat_1', { x: 40, y: 40 }],
      ['llm_1', { x: 140, y: 40 }],
    ]);
  });
});

describe('run state', () => {
  it('gives each step its status, and nodes with only warnings a skipped state, each warning once', () => {
    const ran = run({
      steps: [runStep('chat_1', 'trigger.chat'), runStep('llm_1', 'llm', { status: 'failed', error: 'model not found', duration_ms: 3 })],
      warnings: [{ node: 'summary_1', message: 'timed out' }, { node: null, message: 'graph level' }],
    });
    expect(runStateOf(ran, [{ node: 'summary_1', message: 'timed out' }, { node: 'llm_1', message: 'slow' }])).toEqual({
      chat_1: { status: 'succeeded', error: undefined, warnings: [], durationMs: 1 },
      llm_1: { status: 'failed', error: 'model not found', warnings: ['slow'], durationMs: 3 },
      summary_1: { status: 'skipped', warnings: ['timed out'] },
    });
  });

  it('lights each tool node by the calls the agent made of it: failed if one failed, for their total time', () => {
    const call = (id: string, tool_node: string | null, overrides: Partial<ToolCall> = {}): ToolCall => ({
      id, name: 'lookup_order', arguments: '{}', tool_node, result: 'ok', error: '', duration_ms: 10, details: {}, ...overrides,
    });
    const round = (...tool_calls: ToolCall[]): RunRound => ({ messages: [], tools: [], tool_choice: null, tool_calls });
    const ran = run({
      steps: [
        runStep('agent', 'llm', {
          rounds: [round(call('call_1', 'lookup'), call('call_2', 'weather', { error: 'HTTP 500', duration_ms: 5 }), call('call_3', null)), round(call('call_1', 'lookup')), round()],
        }),
      ],
    });
    expect(runStateOf(ran)).toEqual({
      agent: { status: 'succeeded', error: undefined, warnings: [], durationMs: 1 },
      lookup: { status: 'succeeded', error: undefined, warnings: [], durationMs: 20 },
      weather: { status: 'failed', error: 'HTTP 500', warnings: [], durationMs: 5 },
    });
  });

  it('keeps a tool node running until the last of its overlapping calls ends', () => {
    s().toolStarted('lookup', 'call_1');
    s().toolStarted('lookup', 'call_2');
    s().toolFinished('lookup', 'call_2', { error: 'timed out', durationMs: 30 });
    expect(s().runState.lookup).toMatchObject({ status: 'running', calls: ['call_1'], error: 'timed out' });
    s().toolFinished('lookup', 'call_1', { durationMs: 12 });
    expect(s().runState.lookup).toEqual({ status: 'failed', error: 'timed out', warnings: [], durationMs: 42 });
    s().toolStarted('lookup', 'call_1'); // the next turn's calls start afresh
    s().startRun();
    s().toolStarted('lookup', 'call_1');
    s().toolFinished('lookup', 'call_1', { durationMs: 3 });
    expect(s().runState.lookup).toEqual({ status: 'succeeded', error: undefined, warnings: [], durationMs: 3 });
  });

  it('follows a running turn node by node and forgets it when a new one starts', () => {
    s().nodeEvent('llm_1', { status: 'running' });
    s().nodeEvent('summary_1', { warning: 'summarization timed out' });
    s().nodeEvent('llm_1', { status: 'succeeded', durationMs: 12 });
    expect(s().runState).toEqual({
      llm_1: { status: 'succeeded', error: undefined, warnings: [], durationMs: 12 },
      summary_1: { status: 'skipped', error: undefined, warnings: ['summarization timed out'], durationMs: undefined },
    });
    s().startRun();
    expect(s().runState).toEqual({});
  });
});
