// Models for new nodes: the installation's default (from the server, GET /api/providers/default/:
// the bundled local model when no provider key is configured, else a configured provider's
// default model), filled into every node type that calls a model as it is dropped. (Templates
// come from the server already on that model: GET /api/templates/.)
import type { ModelDefault, NodeParams, NodeTypeSpec } from '../api/types';

export type ModelChoice = Pick<ModelDefault, 'provider' | 'model'>;

/** A node type that calls a model: its params name a model and a provider. */
export function takesModel(spec: NodeTypeSpec | undefined): boolean {
  const properties = spec?.params_schema.properties ?? {};
  return 'model' in properties && 'provider' in properties;
}

/** ``data`` with the default model, for a node type that calls one (else unchanged). */
export function withModel(data: NodeParams, spec: NodeTypeSpec | undefined, choice: ModelChoice | null): NodeParams {
  return choice && takesModel(spec) ? { ...data, model: choice.model, provider: choice.provider } : data;
}
