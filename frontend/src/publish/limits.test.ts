import { describe, expect, it } from 'vitest';
import { fromForm } from './LimitsSection';

const empty = { tokens: '', cost: '' };

describe('spend limit form', () => {
  it('reads empty fields as no limit and numbers as limits', () => {
    expect(fromForm({ workflow: { tokens: '5000', cost: '' }, visitor: { tokens: '', cost: '0.25' }, caller: empty })).toEqual({
      workflow: { tokens: 5000, cost: null },
      visitor: { tokens: null, cost: 0.25 },
      caller: { tokens: null, cost: null },
    });
  });

  it('says which field is wrong', () => {
    expect(() => fromForm({ workflow: { tokens: '1.5', cost: '' }, visitor: empty, caller: empty })).toThrow(/Whole workflow: tokens/);
    expect(() => fromForm({ workflow: empty, visitor: { tokens: '', cost: '-1' }, caller: empty })).toThrow(/Each widget visitor: cost/);
    expect(() => fromForm({ workflow: empty, visitor: empty, caller: { tokens: 'lots', cost: '' } })).toThrow(/Each API caller/);
  });
});
