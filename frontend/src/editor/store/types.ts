// The editor store's state: one slice per concern (this folder), composed into one store by
// ../store.ts. Each slice is written as `EditorSlice<ItsInterface>` (zustand's slices pattern):
// it sees, and may set, the whole state.
import type { StateCreator } from 'zustand';
import type { ClipboardSlice } from './clipboard';
import type { GraphSlice } from './graph';
import type { HistorySlice } from './history';
import type { IssuesSlice } from './issues';
import type { RunSlice } from './runState';
import type { SavingSlice } from './saving';
import type { WorkflowSlice } from './workflow';

export type EditorState = WorkflowSlice & GraphSlice & HistorySlice & ClipboardSlice & SavingSlice & IssuesSlice & RunSlice;

export type EditorSlice<Slice> = StateCreator<EditorState, [], [], Slice>;

export type SetEditor = Parameters<EditorSlice<unknown>>[0];
export type GetEditor = Parameters<EditorSlice<unknown>>[1];
