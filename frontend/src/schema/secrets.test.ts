import { describe, expect, it } from 'vitest';
import { secretNamesIn, secretRef, withSecret } from './secrets';

describe('secrets in headers', () => {
  it('names a secret the way the template reads it: after a dot, or in brackets when it is no identifier', () => {
    expect(secretRef('orders_key')).toBe('{{ secrets.orders_key }}');
    expect(secretRef('orders-key.v2')).toBe("{{ secrets['orders-key.v2'] }}");
  });

  it('finds each secret the headers use, once, in order, in either form', () => {
    expect(
      secretNamesIn({
        Authorization: 'Bearer {{ secrets.orders_key }}',
        'X-Both': "{{ secrets['orders-key.v2'] }}:{{secrets.orders_key}}",
        'X-Quoted': '{{ secrets["b"] }}',
        'X-Plain': 'secrets are not named here',
      }),
    ).toEqual(['orders_key', 'orders-key.v2', 'b']);
    expect(secretNamesIn({})).toEqual([]);
  });

  it('adds a secret to a header, after its text', () => {
    expect(withSecret('', 'k')).toBe('{{ secrets.k }}');
    expect(withSecret('Token ', 'k')).toBe('Token {{ secrets.k }}');
  });
});
