// Export and import of workflows as JSON files.
import type { Graph, Workflow } from '../api/types';

export const EXPORT_FORMAT = 'skein.workflow';

export interface WorkflowFile {
  format: typeof EXPORT_FORMAT;
  version: 1;
  name: string;
  graph: Graph;
}

export function toExport(workflow: Pick<Workflow, 'name' | 'graph'>): WorkflowFile {
  return { format: EXPORT_FORMAT, version: 1, name: workflow.name, graph: workflow.graph };
}

export function exportFilename(name: string): string {
  const slug = name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'workflow';
  return `${slug}.skein.json`;
}

export function download(filename: string, data: unknown) {
  const blob = new Blob([JSON.stringify(data, null, 2)], { type: 'application/json' });
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** Reads an exported file (or a bare `{nodes, edges}` graph); throws with a message people can act on. */
export function parseImport(text: string, fallbackName: string): { name: string; graph: Graph } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error('This file is not JSON. Choose a workflow exported from Skein (.skein.json).');
  }
  if (!parsed || typeof parsed !== 'object') throw new Error('This file does not contain a workflow.');
  const obj = parsed as Record<string, unknown>;
  const graph = (obj.graph ?? obj) as Record<string, unknown>;
  if (!Array.isArray(graph.nodes) || !Array.isArray(graph.edges ?? [])) {
    throw new Error('This file has no graph: expected "nodes" and "edges" lists.');
  }
  for (const node of graph.nodes as Record<string, unknown>[]) {
    if (!node || typeof node.id !== 'string' || typeof node.type !== 'string') {
      throw new Error('Every node needs a string "id" and "type".');
    }
  }
  const name = typeof obj.name === 'string' && obj.name.trim() ? obj.name.trim() : fallbackName;
  return { name, graph: { nodes: graph.nodes as Graph['nodes'], edges: (graph.edges ?? []) as Graph['edges'] } };
}
