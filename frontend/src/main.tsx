import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter } from 'react-router';
import { App } from './App';
import { AuthProvider } from './auth';
import { ToastProvider } from './components/toast';
import { isUnavailable } from './lib/errors';
import { ApiError } from './lib/graphql';
import { followSystemTheme } from './lib/theme';
import './styles.css';
import './theme.css';

// Before the first render, so that a dark page never flashes light.
followSystemTheme();

const queryClient = new QueryClient({
  queryCache: new QueryCache(),
  mutationCache: new MutationCache(),
  defaultOptions: {
    queries: {
      // A request the server refused will be refused again; retry only network
      // trouble and a database outage (with react-query's backoff, up to ~30 s).
      retry: (n, err) => (isUnavailable(err) ? n < 5 : n < 2 && err instanceof ApiError && err.status === 0),
      refetchOnWindowFocus: false,
    },
  },
});

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <BrowserRouter>
        <ToastProvider>
          <AuthProvider>
            <App />
          </AuthProvider>
        </ToastProvider>
      </BrowserRouter>
    </QueryClientProvider>
  </StrictMode>,
);
