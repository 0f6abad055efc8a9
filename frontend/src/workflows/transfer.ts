// Workflow files (`{"skein": 1, "name", "graph"}`): exported and imported by the server, which
// writes providers by name and kind and reports what it could not map on import.
import { ecosystem } from '../api/ecosystem';
import type { Graph, Workflow } from '../api/types';
import { toast } from '../ui/toast';

export const FORMAT_VERSION = 1;

export interface WorkflowFile {
  skein: typeof FORMAT_VERSION;
  name: string;
  graph: Graph;
}

/** A local copy of edits not saved (the conflict banner): the file format, ids as they are. */
export function toExport(workflow: Pick<Workflow, 'name' | 'graph'>): WorkflowFile {
  return { skein: FORMAT_VERSION, name: workflow.name, graph: workflow.graph };
}

export function exportFilename(name: string): string {
  const slug = name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'workflow';
  return `${slug}.skein.json`;
}

export function download(filename: string, data: unknown) {
  const blob = new Blob([JSON.stringify(data, null, 2) + '\n'], { type: 'application/json' });
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** Downloads the saved draft as the server writes it (no secrets, providers by name and kind). */
export async function exportWorkflow(workflowId: number, name: string): Promise<void> {
  try {
    download(exportFilename(name), await ecosystem.exportFile(workflowId));
  } catch (error) {
    toast((error as Error).message, 'error');
  }
}

/** Imports a file's text; says what could not be mapped (a provider of another account, say). */
export async function importWorkflow(text: string): Promise<Workflow> {
  const created = await ecosystem.importFile(text);
  const unmapped = created.errors.filter((e) => e.field === 'provider');
  if (unmapped.length) toast(`Imported “${created.name}”. To fix: ${unmapped.map((e) => `${e.node}: ${e.message}`).join('; ')}`, 'info', 9000);
  else toast(`Imported “${created.name}”`, 'success');
  return created;
}
