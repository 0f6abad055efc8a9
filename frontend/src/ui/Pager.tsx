/** The "1–25 of 80 · ← Newer · Older →" row under a paged list (offset paging, newest first). */
export function Pager({ offset, shown, count, hasNext, pageSize, onOffset }: {
  offset: number;
  shown: number;
  count: number;
  hasNext: boolean;
  pageSize: number;
  onOffset: (offset: number) => void;
}) {
  return (
    <div className="pager">
      <span className="muted small">{offset + 1}–{offset + shown} of {count}</span>
      <button className="btn btn-sm" disabled={offset === 0} onClick={() => onOffset(Math.max(0, offset - pageSize))}>← Newer</button>
      <button className="btn btn-sm" disabled={!hasNext} onClick={() => onOffset(offset + pageSize)}>Older →</button>
    </div>
  );
}
