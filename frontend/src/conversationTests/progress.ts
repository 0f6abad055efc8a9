// A test run as it progresses: read once, then again whenever its socket (ws/test-runs/{id}/) says a
// turn or a test finished, until it is over. Without a socket (or if it drops) a slow poll keeps the
// page moving.
import { useCallback, useEffect, useRef, useState } from 'react';
import { testsApi, type TestRun } from './api';
import { isFinished } from './checks';

const POLL_MS = 3000;
const COALESCE_MS = 120;

export interface LiveRun {
  run: TestRun | null;
  error: Error | null;
  /** Whether the socket is delivering events (else only the poll updates the run). */
  live: boolean;
  reload: () => void;
}

export function socketUrl(path: string, location: Location = window.location): string {
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${path}`;
}

export function useTestRun(id: number | null): LiveRun {
  const [run, setRun] = useState<TestRun | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [live, setLive] = useState(false);
  const generation = useRef(0);
  const pending = useRef<number | null>(null);

  const load = useCallback(() => {
    if (id === null) return;
    const mine = generation.current;
    testsApi.testRun(id).then(
      (value) => {
        if (mine !== generation.current) return;
        setRun(value);
        setError(null);
      },
      (err: Error) => mine === generation.current && setError(err),
    );
  }, [id]);

  const soon = useCallback(() => {
    if (pending.current !== null) return;
    pending.current = window.setTimeout(() => {
      pending.current = null;
      load();
    }, COALESCE_MS);
  }, [load]);

  useEffect(() => {
    generation.current += 1;
    setRun(null);
    setError(null);
    if (id === null) return;
    load();
    let socket: WebSocket | null = null;
    try {
      socket = new WebSocket(socketUrl(`/ws/test-runs/${id}/`));
      socket.onopen = () => {
        setLive(true);
        soon(); // whatever finished before the socket opened
      };
      socket.onmessage = () => soon();
      socket.onclose = () => setLive(false);
    } catch {
      socket = null;
    }
    return () => {
      generation.current += 1;
      if (pending.current !== null) window.clearTimeout(pending.current);
      pending.current = null;
      if (socket) {
        socket.onclose = null;
        socket.close();
      }
    };
  }, [id, load, soon]);

  const finished = run !== null && isFinished(run.status);
  useEffect(() => {
    if (id === null || finished) return;
    const timer = window.setInterval(load, POLL_MS);
    return () => window.clearInterval(timer);
  }, [id, finished, load]);

  return { run, error, live, reload: load };
}
