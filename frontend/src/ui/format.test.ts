import { describe, expect, it } from 'vitest';
import { formatCount } from './format';

describe('formatCount', () => {
  it('groups thousands', () => {
    expect([0, 18, 999, 1000, 12345, 1234567].map(formatCount)).toEqual(['0', '18', '999', '1,000', '12,345', '1,234,567']);
  });
});
