import { describe, expect, it } from 'vitest';

import { Conversation } from './state';

const view = (c: Conversation) => c.messages.map((m) => `${m.seq ?? '-'}:${m.role}:${m.content}`);

describe('Conversation', () => {
  it('streams a reply into the run placeholder and keeps it after a history sync', () => {
    const c = new Conversation();
    c.addUser('hi', 'c1');
    c.accepted(7, 'c1');
    c.token(7, 'agent', 'Hel');
    c.token(7, 'agent', 'lo');
    expect(view(c)).toEqual(['-:user:hi', '-:assistant:Hello']);
    c.finished(7, 'Hello');
    c.merge(
      [
        { seq: 1, role: 'user', content: 'hi', run: 7, client_id: 'c1' },
        { seq: 2, role: 'assistant', content: 'Hello', run: 7 },
      ],
      null,
    );
    expect(view(c)).toEqual(['1:user:hi', '2:assistant:Hello']);
    expect(c.lastSeq()).toBe(2);
    expect(c.busy()).toBe(false);
  });

  it('does not duplicate what arrives both as history and as events after a reconnect', () => {
    const c = new Conversation();
    c.addUser('one', 'a');
    c.accepted(1, 'a');
    c.token(1, 'n', 'partial');
    c.markStreamsStale(); // connection lost
    c.merge([{ seq: 1, role: 'user', content: 'one', run: 1, client_id: 'a' }], 1);
    expect(c.token(1, 'n', ' more')).toBeUndefined(); // tokens missed: wait for the final reply
    c.finished(1, 'partial reply');
    c.merge([{ seq: 2, role: 'assistant', content: 'partial reply', run: 1 }], null);
    c.finished(1, 'partial reply'); // the event again
    expect(view(c)).toEqual(['1:user:one', '2:assistant:partial reply']);
  });

  it('recognises an unacknowledged message in the history by its client id', () => {
    const c = new Conversation();
    c.addUser('lost ack', 'x');
    expect(c.unsent()).toHaveLength(1);
    c.merge([{ seq: 5, role: 'user', content: 'lost ack', run: 9, client_id: 'x' }], 9);
    expect(c.unsent()).toHaveLength(0);
    expect(view(c)).toEqual(['5:user:lost ack', '-:assistant:']);
  });

  it('orders history from a reload before newer messages', () => {
    const c = new Conversation();
    c.merge(
      [
        { seq: 3, role: 'user', content: 'c', run: 2 },
        { seq: 1, role: 'user', content: 'a', run: 1 },
        { seq: 2, role: 'assistant', content: 'b', run: 1 },
      ],
      2,
    );
    expect(view(c)).toEqual(['1:user:a', '2:assistant:b', '3:user:c', '-:assistant:']);
  });

  it('shows the latest model writing when several stream', () => {
    const c = new Conversation();
    c.addUser('q', 'q');
    c.accepted(3, 'q');
    c.token(3, 'draft', 'notes');
    c.token(3, 'final', 'Answer');
    expect(c.messages[1].content).toBe('Answer');
  });

  it('turns a failed run into an error bubble', () => {
    const c = new Conversation();
    c.addUser('q', 'q');
    c.accepted(4, 'q');
    c.failed(4, 'Sorry');
    expect(view(c)).toEqual(['-:user:q', '-:error:Sorry']);
    c.refused('nope', 'Too many messages');
    expect(c.busy()).toBe(false);
  });

  it('says it is summarizing earlier messages until the summary is made or the first token comes', () => {
    const c = new Conversation();
    c.addUser('q', 'q');
    c.accepted(5, 'q');
    expect(c.summarizing(5, true)?.summarizing).toBe(true);
    c.summarizing(5, false);
    expect(c.messages[1].summarizing).toBe(false);
    c.summarizing(5, true);
    c.token(5, 'agent', 'Hi');
    expect(c.messages[1]).toMatchObject({ summarizing: false, content: 'Hi' });
    expect(c.summarizing(99, true)).toBeUndefined(); // another conversation's run
    c.finished(5, 'Hi');
    expect(c.summarizing(5, true)).toBeUndefined(); // too late: the reply is there
  });
});

describe('composing and cut replies', () => {
  it('says a message is over the limit in characters, not bytes or UTF-16 units', async () => {
    const { lengthProblem } = await import('./state');
    expect(lengthProblem('ab', 2)).toBeNull();
    expect(lengthProblem('😀😀', 2)).toBeNull();
    expect(lengthProblem('abc', 2)).toBe('3 characters: the limit is 2. Shorten the message to send it.');
  });

  it('keeps a reply marked cut when the history brings the same reply', () => {
    const c = new Conversation();
    c.addUser('hi', 'c1');
    c.accepted(3, 'c1');
    c.finished(3, 'The answer is', true);
    c.merge([{ seq: 1, role: 'user', content: 'hi', run: 3 }, { seq: 2, role: 'assistant', content: 'The answer is', run: 3 }], null);
    expect(c.messages.map((m) => m.cut ?? false)).toEqual([false, true]);
  });
});

describe('tool calls', () => {
  it('says which tools the agent is looking up while their calls run, and nothing once they end', async () => {
    const { lookupText } = await import('./state');
    const c = new Conversation();
    c.addUser('where is order 42?', 'c1');
    c.accepted(4, 'c1');
    const reply = c.messages[1];
    expect(c.toolStarted(4, 'call_1', 'lookup_order')).toBe(reply);
    c.toolStarted(4, 'call_2', 'lookup_order');
    c.toolStarted(4, 'call_3', 'weather');
    expect(lookupText(reply)).toBe('Looking up lookup_order, weather…');
    c.toolFinished(4, 'call_1');
    c.toolFinished(4, 'call_3');
    expect(lookupText(reply)).toBe('Looking up lookup_order…');
    c.toolFinished(4, 'call_2');
    expect(lookupText(reply)).toBeNull();
    expect(c.toolFinished(4, 'call_2')).toBeUndefined(); // an end seen twice changes nothing
    expect(c.toolStarted(99, 'call_1', 'lookup_order')).toBeUndefined(); // another conversation's run
  });

  it('drops a lookup when the reply ends or the connection drops (its end may never come)', async () => {
    const { lookupText } = await import('./state');
    const c = new Conversation();
    c.addUser('one', 'a');
    c.accepted(1, 'a');
    c.toolStarted(1, 'call_1', 'lookup_order');
    c.markStreamsStale();
    expect(lookupText(c.messages[1])).toBeNull();
    c.toolStarted(1, 'call_2', 'lookup_order');
    c.finished(1, 'Shipped.');
    expect(lookupText(c.messages[1])).toBeNull();
    expect(c.toolStarted(1, 'call_3', 'lookup_order')).toBeUndefined(); // too late: the reply is there
  });
});
