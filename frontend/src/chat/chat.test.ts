// The widget's chat view (frontend/widget/src/chat.ts) in a DOM: what the composer says of a
// message over the limit, right-to-left text, and a reply cut at the model's length limit.
import { describe, expect, it } from 'vitest';
import { mountChat, type ServerEvent, type Transport } from './transport';

function harness(maxLength?: number) {
  const sent: string[] = [];
  let listener: Parameters<Transport['start']>[0];
  const transport: Transport = {
    start(value) {
      listener = value;
      value.status('online');
    },
    send: ({ text }) => void sent.push(text),
    sync: () => {},
    stop: () => {},
  };
  const host = document.createElement('div');
  document.body.append(host);
  mountChat(host, { transport, shadow: false, maxLength });
  const input = host.querySelector('textarea')!;
  const type = (text: string) => {
    input.value = text;
    input.dispatchEvent(new Event('input'));
  };
  const emit = (event: ServerEvent) => listener.event(event);
  return { host, input, type, sent, emit, send: () => host.querySelector('form')!.requestSubmit() };
}

describe('the chat view', () => {
  it('says when a message is over the limit instead of cutting it, and sends nothing until it fits', () => {
    const chat = harness(10);
    expect(chat.input.hasAttribute('maxlength')).toBe(false); // the browser would cut it silently
    chat.type('x'.repeat(12));
    const limit = chat.host.querySelector('.limit') as HTMLElement;
    expect(limit.hidden).toBe(false);
    expect(limit.textContent).toBe('12 characters: the limit is 10. Shorten the message to send it.');
    expect((chat.host.querySelector('.send') as HTMLButtonElement).disabled).toBe(true);
    chat.send();
    expect(chat.sent).toEqual([]);
    expect(chat.input.value).toBe('x'.repeat(12)); // nothing lost
    chat.type('x'.repeat(10));
    expect(limit.hidden).toBe(true);
    chat.send();
    expect(chat.sent).toEqual(['x'.repeat(10)]);
  });

  it('holds the widget to the server\'s 4000 characters by default', () => {
    const chat = harness();
    chat.type('y'.repeat(4001));
    expect(chat.host.querySelector('.limit')!.textContent).toContain('the limit is 4,000');
  });

  it('lets each bubble take its own direction and marks a reply cut at the length limit', () => {
    const chat = harness();
    chat.type('שלום');
    chat.send();
    chat.emit({ type: 'accepted', data: { run: 4, client_id: null } });
    chat.emit({ type: 'run.finished', data: { run: 4, reply: 'مرحبا، كيف', cut: true } });
    const [user, reply] = [...chat.host.querySelectorAll('.msg')] as HTMLElement[];
    expect(user.getAttribute('dir')).toBe('auto');
    expect(reply.getAttribute('dir')).toBe('auto');
    expect(reply.classList.contains('cut')).toBe(true);
    expect((reply.querySelector('.cut-note') as HTMLElement).hidden).toBe(false);
    expect(reply.textContent).toContain('Cut short: the reply reached its length limit.');
    expect((user.querySelector('.cut-note') as HTMLElement).hidden).toBe(true);
    expect(chat.input.getAttribute('dir')).toBe('auto');
  });
});
