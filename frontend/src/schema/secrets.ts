// How a request's headers name the owner's stored secrets: `{{ secrets.NAME }}` in a header's
// template. The node's `secrets` param lists the names its headers use (only those are read when
// the request is sent), so the editor keeps that list in step with the headers.

/** A name Jinja reads after a dot (`secrets.api_key`); others need brackets (`secrets['my-key']`). */
const DOTTED = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The template text that puts a secret's value into a header. */
export function secretRef(name: string): string {
  return DOTTED.test(name) ? `{{ secrets.${name} }}` : `{{ secrets['${name}'] }}`;
}

const REFERENCE = /secrets\s*(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*(['"])([A-Za-z0-9_.-]{1,100})\2\s*\])/g;

/** The secrets the headers use, each once, in the order they first appear. */
export function secretNamesIn(headers: Record<string, string>): string[] {
  const names: string[] = [];
  for (const value of Object.values(headers)) {
    for (const match of value.matchAll(REFERENCE)) {
      const name = match[1] ?? match[3];
      if (!names.includes(name)) names.push(name);
    }
  }
  return names;
}

/** A header value with a secret added after what is there. */
export function withSecret(value: string, name: string): string {
  const ref = secretRef(name);
  return value.trim() ? `${value.replace(/\s+$/, '')} ${ref}` : ref;
}
