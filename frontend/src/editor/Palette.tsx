// Node palette from `GET /api/node-types/`: grouped by category, searchable; drag an item onto
// the canvas, or click it to drop it in the middle of the view.
import { useMemo, useState, type DragEvent } from 'react';
import type { NodeTypeSpec } from '../api/types';
import { categoryClass, categoryRank } from './categories';

export const DRAG_MIME = 'application/skein-node-type';

export function groupSpecs(specs: NodeTypeSpec[], query: string): [string, NodeTypeSpec[]][] {
  const q = query.trim().toLowerCase();
  const matches = specs.filter(
    (s) => !q || [s.label, s.type, s.category, s.description].some((text) => text?.toLowerCase().includes(q)),
  );
  const groups = new Map<string, NodeTypeSpec[]>();
  for (const s of matches) groups.set(s.category, [...(groups.get(s.category) ?? []), s]);
  return [...groups.entries()].sort(([a], [b]) => categoryRank(a) - categoryRank(b) || a.localeCompare(b));
}

export function Palette({ specs, onAdd }: { specs: NodeTypeSpec[]; onAdd: (type: string) => void }) {
  const [query, setQuery] = useState('');
  const groups = useMemo(() => groupSpecs(specs, query), [specs, query]);

  const onDragStart = (event: DragEvent, type: string) => {
    event.dataTransfer.setData(DRAG_MIME, type);
    event.dataTransfer.setData('text/plain', type);
    event.dataTransfer.effectAllowed = 'move';
  };

  return (
    <aside className="palette" aria-label="Node palette">
      <div className="palette-search">
        <input type="search" placeholder="Search nodes…" value={query} onChange={(e) => setQuery(e.target.value)} aria-label="Search nodes" />
      </div>
      <div className="palette-groups">
        {groups.length === 0 && <p className="muted small palette-empty">No node matches “{query}”.</p>}
        {groups.map(([category, items]) => (
          <section key={category} className="palette-group">
            <h3>{category}</h3>
            {items.map((spec) => (
              <div
                key={spec.type}
                className={`palette-item ${categoryClass(spec.category)}`}
                draggable
                onDragStart={(e) => onDragStart(e, spec.type)}
                onClick={() => onAdd(spec.type)}
                onKeyDown={(e) => (e.key === 'Enter' || e.key === ' ') && onAdd(spec.type)}
                role="button"
                aria-label={`${spec.label}: drag onto the canvas or press Enter to add`}
                tabIndex={0}
                title={`${spec.description}\n\nDrag onto the canvas, or click to add.`}
                data-testid={`palette-${spec.type}`}
              >
                <span className="palette-dot" aria-hidden="true" />
                <span className="palette-text">
                  <span className="palette-label">{spec.label}</span>
                  <span className="palette-desc">{spec.description}</span>
                </span>
              </div>
            ))}
          </section>
        ))}
      </div>
      <div className="palette-legend" aria-label="Port legend">
        <span><i className="lg lg-flow" /> flow</span>
        <span><i className="lg lg-memory" /> memory</span>
        <span><i className="lg lg-llm" /> model</span>
        <span><i className="lg lg-tool" /> tool</span>
      </div>
    </aside>
  );
}
