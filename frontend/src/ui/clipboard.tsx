// Copying text, with a fallback for pages where the Clipboard API is not available.
import { useState } from 'react';
import { toast } from './toast';

export async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = document.createElement('textarea');
    area.value = text;
    area.style.position = 'fixed';
    area.style.opacity = '0';
    document.body.appendChild(area);
    area.select();
    const ok = document.execCommand?.('copy') ?? false;
    area.remove();
    return ok;
  }
}

/** A "Copy" button that says "Copied" for a moment. */
export function CopyButton({ text, label = 'Copy', what }: { text: string; label?: string; what?: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    if (await copyText(text)) {
      setCopied(true);
      window.setTimeout(() => setCopied(false), 1500);
    } else toast('Could not copy: select the text and copy it by hand.', 'error');
  };
  return (
    <button type="button" className="btn btn-sm" onClick={() => void copy()} aria-label={what ? `${label} ${what}` : label}>
      {copied ? 'Copied ✓' : label}
    </button>
  );
}
