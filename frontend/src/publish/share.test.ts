import { describe, expect, it } from 'vitest';
import { curlExample, formToTheme, parseOrigins, signedCurlExample, themeToForm } from './share';

describe('share helpers', () => {
  it('builds a curl call that waits for the reply', () => {
    expect(curlExample('http://x.test/api/hooks/abc/')).toBe(
      `curl -X POST 'http://x.test/api/hooks/abc/?wait=1' -H 'Content-Type: application/json' -d '{"message":"hello"}'`,
    );
    expect(curlExample("http://x.test/h/?a=1&b='")).toContain(`'http://x.test/h/?a=1&b='\\''&wait=1'`);
  });

  it('signs the example with the timestamp and signature headers', () => {
    const signed = signedCurlExample('http://x.test/api/hooks/abc/');
    expect(signed).toContain('openssl dgst -sha256 -hmac "$SECRET"');
    expect(signed).toContain('-H "X-Skein-Timestamp: $TS" -H "X-Skein-Signature: sha256=$SIG"');
  });

  it('reads allowed origins from free text', () => {
    expect(parseOrigins(' https://a.com/\nhttps://b.com, https://a.com \n\n')).toEqual(['https://a.com', 'https://b.com']);
    expect(parseOrigins('   ')).toEqual([]);
  });

  it('turns the theme into form fields and back, leaving blanks out', () => {
    const theme = { title: 'Shop', starters: ['Hours?', 'Prices?'], color: '#ff0000', position: 'left' as const };
    const form = themeToForm(theme);
    expect(form.starters).toBe('Hours?\nPrices?');
    expect(form.welcome).toBe('');
    expect(formToTheme(form)).toEqual(theme);
    expect(formToTheme({ ...form, starters: ' \n', title: '  ' })).toEqual({ color: '#ff0000', position: 'left' });
  });
});
