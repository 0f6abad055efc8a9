// Palette order and colours of node categories (colours live in styles.css as .cat-*).
export const CATEGORY_ORDER = ['Triggers', 'AI', 'Memory', 'Tools', 'Routing', 'Steps', 'Transform', 'Output'];

export function categoryClass(category: string | undefined): string {
  return `cat-${(category ?? 'other').toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
}

export function categoryRank(category: string): number {
  const i = CATEGORY_ORDER.indexOf(category);
  return i === -1 ? CATEGORY_ORDER.length : i;
}
