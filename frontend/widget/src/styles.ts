// Styles live in the widget's shadow root: the page's CSS cannot reach in, ours cannot leak out.
// Colours come from custom properties set from the theme.

// The message box is 16 px on phones (touch screens, narrow windows): a phone zooms the page in on a
// smaller input when the visitor taps it.
export const STYLES = `
:host{all:initial}
*{box-sizing:border-box;font:inherit}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.chat{--a:var(--sk-accent,#2563eb);--oa:var(--sk-on-accent,#fff);--bg:var(--sk-bg,#fff);--fg:var(--sk-fg,#1f2937);
display:flex;flex-direction:column;height:100%;min-height:0;background:var(--bg);color:var(--fg);
font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
header{display:flex;align-items:center;gap:4px;padding:10px 12px;background:var(--a);color:var(--oa)}
h2{flex:1;margin:0;font-size:16px;font-weight:600;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
button{cursor:pointer;border:0;border-radius:8px}
button:disabled{cursor:default;opacity:.5}
:focus-visible{outline:2px solid var(--a);outline-offset:2px}
header :focus-visible{outline-color:var(--oa)}
.icon{width:32px;height:32px;background:transparent;color:inherit;font-size:20px;line-height:1}
.icon:hover{background:rgba(255,255,255,.18)}
.log{flex:1;min-height:0;overflow-y:auto;padding:12px;display:flex;flex-direction:column;gap:8px}
.msg{max-width:85%;padding:8px 12px;border-radius:14px;white-space:pre-wrap;overflow-wrap:anywhere}
.assistant{align-self:flex-start;background:rgba(127,127,127,.14)}
.user{align-self:flex-end;background:var(--a);color:var(--oa)}
.unsent{opacity:.7}
.error{align-self:flex-start;background:#fde8e8;color:#8a1c1c}
.streaming .text:empty::after,.streaming .text::after{content:"\\2026";opacity:.6}
.summarizing .text{font-style:italic;opacity:.75}.summarizing .text::after{content:none}
.starters{display:flex;flex-wrap:wrap;gap:6px;padding:0 12px}
.starters:empty{display:none}
.starter{padding:6px 10px;background:transparent;color:var(--a);border:1px solid var(--a);border-radius:14px;font-size:14px}
.status{margin:0;padding:4px 12px;font-size:13px;color:#92400e}
.status[hidden],.limit[hidden],.cut-note[hidden],.lookup[hidden]{display:none}
.limit{margin:0;padding:4px 12px;font-size:13px;color:#8a1c1c}
.lookup{display:block;margin-top:4px;font-size:13px;font-style:italic;opacity:.75}
.cut-note{display:block;margin-top:4px;font-size:12px;opacity:.75;font-style:italic}
.composer{display:flex;gap:8px;padding:10px 12px;border-top:1px solid rgba(127,127,127,.25)}
textarea{flex:1;resize:none;max-height:120px;padding:8px 10px;border:1px solid rgba(127,127,127,.45);border-radius:10px;background:var(--bg);color:var(--fg)}
.send{width:40px;background:var(--a);color:var(--oa);font-size:16px}
@media (max-width:600px),(pointer:coarse){textarea{font-size:16px}}
.launcher{position:fixed;bottom:20px;width:56px;height:56px;border-radius:50%;background:var(--sk-accent,#2563eb);color:var(--sk-on-accent,#fff);
box-shadow:0 4px 14px rgba(0,0,0,.25);z-index:2147483000;display:grid;place-items:center}
.launcher svg{width:28px;height:28px}
.panel{position:fixed;bottom:88px;width:min(380px,calc(100vw - 24px));height:min(560px,calc(100vh - 110px));border-radius:14px;overflow:hidden;
box-shadow:0 8px 30px rgba(0,0,0,.3);z-index:2147483000}
.panel[hidden]{display:none}
.right{right:20px}.left{left:20px}
`;

/** Style a shadow root with a constructed stylesheet: pages whose Content-Security-Policy forbids
 * inline styles (no 'unsafe-inline' in style-src) still show the widget. A <style> element where
 * constructed stylesheets are missing. */
export function adoptStyles(root: ShadowRoot): void {
  if ('adoptedStyleSheets' in root && typeof CSSStyleSheet !== 'undefined' && 'replaceSync' in CSSStyleSheet.prototype) {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(STYLES);
    root.adoptedStyleSheets = [...root.adoptedStyleSheets, sheet];
    return;
  }
  const style = document.createElement('style');
  style.textContent = STYLES;
  root.prepend(style);
}
