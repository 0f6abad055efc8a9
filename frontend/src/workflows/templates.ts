// Starter workflows shown on the workflow list. Params left out take the node type's defaults;
// nodes that call a model get the installation's default model when created (editor/models.ts).
import type { Graph } from '../api/types';
import { edgeId } from '../editor/store';

export interface Template {
  key: string;
  name: string;
  description: string;
  graph: Graph;
}

const edge = (source: string, sourceHandle: string, target: string, targetHandle: string) => ({
  id: edgeId({ source, sourceHandle, target, targetHandle }),
  source,
  sourceHandle,
  target,
  targetHandle,
});

export const TEMPLATES: Template[] = [
  {
    key: 'blank',
    name: 'Blank workflow',
    description: 'An empty canvas. Drag a trigger from the palette to begin.',
    graph: { nodes: [], edges: [] },
  },
  {
    key: 'chatbot',
    name: 'Chatbot',
    description: 'Chat message → LLM → reply, with the whole conversation as memory.',
    graph: {
      nodes: [
        { id: 'chat_1', type: 'trigger.chat', position: { x: 0, y: 80 }, data: {} },
        { id: 'llm_1', type: 'llm', position: { x: 300, y: 60 }, data: { system_prompt: 'You are a friendly, concise assistant.' } },
        { id: 'buffer_1', type: 'memory.buffer', position: { x: 300, y: 300 }, data: {} },
        { id: 'output_1', type: 'output', position: { x: 600, y: 80 }, data: {} },
      ],
      edges: [edge('chat_1', 'output', 'llm_1', 'input'), edge('buffer_1', 'memory', 'llm_1', 'memory'), edge('llm_1', 'output', 'output_1', 'input')],
    },
  },
  {
    key: 'summary',
    name: 'Chatbot with summarizing memory',
    description: 'Long conversations stay cheap: older turns are condensed into a running summary.',
    graph: {
      nodes: [
        { id: 'chat_1', type: 'trigger.chat', position: { x: 0, y: 80 }, data: {} },
        { id: 'llm_1', type: 'llm', position: { x: 300, y: 60 }, data: { system_prompt: 'You are a friendly, concise assistant.' } },
        { id: 'summary_1', type: 'memory.summary', position: { x: 300, y: 300 }, data: { max_messages: 20, keep_last: 6 } },
        { id: 'output_1', type: 'output', position: { x: 600, y: 80 }, data: {} },
      ],
      edges: [edge('chat_1', 'output', 'llm_1', 'input'), edge('summary_1', 'memory', 'llm_1', 'memory'), edge('llm_1', 'output', 'output_1', 'input')],
    },
  },
  {
    key: 'router',
    name: 'Router',
    description: 'A model sorts each message into a route; each route has its own assistant.',
    graph: {
      nodes: [
        { id: 'chat_1', type: 'trigger.chat', position: { x: 0, y: 140 }, data: {} },
        {
          id: 'router_1',
          type: 'router.llm',
          position: { x: 280, y: 120 },
          data: {
            routes: [
              { name: 'billing', description: 'invoices, payments, refunds, prices' },
              { name: 'general', description: 'anything else' },
            ],
            default_route: 'general',
          },
        },
        { id: 'llm_billing', type: 'llm', position: { x: 580, y: 0 }, data: { system_prompt: 'You are a billing specialist. Be precise about amounts and dates.' } },
        { id: 'llm_general', type: 'llm', position: { x: 580, y: 260 }, data: { system_prompt: 'You are a friendly general assistant.' } },
        { id: 'output_1', type: 'output', position: { x: 900, y: 140 }, data: {} },
      ],
      edges: [
        edge('chat_1', 'output', 'router_1', 'input'),
        edge('router_1', 'billing', 'llm_billing', 'input'),
        edge('router_1', 'general', 'llm_general', 'input'),
        edge('llm_billing', 'output', 'output_1', 'input'),
        edge('llm_general', 'output', 'output_1', 'input'),
      ],
    },
  },
];
