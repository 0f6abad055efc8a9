// The server's validation issues of the draft (as it opened, after each save, from a refused
// publish or test run), and each node's share of them as a stable selector result.
import type { ValidationIssue } from '../../api/types';
import type { EditorSlice } from './types';

export interface IssuesSlice {
  issues: ValidationIssue[];
  setIssues: (issues: ValidationIssue[]) => void;
}

export const createIssuesSlice: EditorSlice<IssuesSlice> = (set) => ({
  issues: [],
  setIssues: (issues) => set({ issues }),
});

const issueIndex = new WeakMap<ValidationIssue[], Map<string, ValidationIssue[]>>();
const NO_ISSUES: ValidationIssue[] = [];

/** Issues grouped by node id ('' for graph-level ones), grouped once per issues list. */
export function issuesByNode(issues: ValidationIssue[]): Map<string, ValidationIssue[]> {
  let map = issueIndex.get(issues);
  if (!map) {
    map = new Map();
    for (const issue of issues) {
      const key = issue.node ?? '';
      const list = map.get(key);
      if (list) list.push(issue);
      else map.set(key, [issue]);
    }
    issueIndex.set(issues, map);
  }
  return map;
}

/** One node's issues: the same array for as long as the issues list is the same (a stable selector result). */
export function issuesOf(issues: ValidationIssue[], nodeId: string): ValidationIssue[] {
  return issuesByNode(issues).get(nodeId) ?? NO_ISSUES;
}
