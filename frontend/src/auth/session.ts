// Who is logged in. Any API call that answers "not authenticated" sends the app to the login page.
import { create } from 'zustand';
import { api, ApiError, onUnauthorized } from '../api/client';
import type { User } from '../api/types';

interface SessionState {
  user: User | null;
  status: 'loading' | 'anonymous' | 'authenticated';
  check: () => Promise<void>;
  login: (username: string, password: string) => Promise<void>;
  logout: () => Promise<void>;
}

export const useSession = create<SessionState>()((set) => ({
  user: null,
  status: 'loading',
  check: async () => {
    try {
      const user = await api.me();
      set({ user, status: 'authenticated' });
    } catch (error) {
      if (error instanceof ApiError && (error.status === 401 || error.status === 403)) set({ user: null, status: 'anonymous' });
      else throw error;
    }
  },
  login: async (username, password) => {
    const user = await api.login(username, password);
    set({ user, status: 'authenticated' });
  },
  logout: async () => {
    try {
      await api.logout();
    } finally {
      set({ user: null, status: 'anonymous' });
    }
  },
}));

onUnauthorized(() => useSession.setState({ user: null, status: 'anonymous' }));
