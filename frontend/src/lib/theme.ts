/** ThemeChoice is what the user picked: follow the system, or a fixed theme. */
export type ThemeChoice = 'system' | 'light' | 'dark';

/** Theme is what the page is drawn in. */
export type Theme = 'light' | 'dark';

export const themeChoices: readonly { value: ThemeChoice; label: string }[] = [
  { value: 'system', label: 'System' },
  { value: 'light', label: 'Light' },
  { value: 'dark', label: 'Dark' },
];

/** themeStorageKey is where the choice is remembered in localStorage. */
export const themeStorageKey = 'tifeeds-theme';

/** parseThemeChoice reads a stored choice; anything unknown (or nothing) follows the system. */
export function parseThemeChoice(stored: string | null | undefined): ThemeChoice {
  return stored === 'light' || stored === 'dark' ? stored : 'system';
}

/** resolveTheme is the theme a choice gives when the system prefers dark or not. */
export function resolveTheme(choice: ThemeChoice, systemPrefersDark: boolean): Theme {
  if (choice === 'system') return systemPrefersDark ? 'dark' : 'light';
  return choice;
}

const darkQuery = '(prefers-color-scheme: dark)';

/** storedThemeChoice is the remembered choice; storage may be refused (private mode), then the system's. */
export function storedThemeChoice(): ThemeChoice {
  try {
    return parseThemeChoice(localStorage.getItem(themeStorageKey));
  } catch {
    return 'system';
  }
}

/** applyTheme draws the document in the theme choice gives now; CSS reads html[data-theme]. */
export function applyTheme(choice: ThemeChoice): void {
  const theme = resolveTheme(choice, window.matchMedia(darkQuery).matches);
  document.documentElement.dataset.theme = theme;
}

/** saveThemeChoice remembers choice and applies it. */
export function saveThemeChoice(choice: ThemeChoice): void {
  try {
    if (choice === 'system') localStorage.removeItem(themeStorageKey);
    else localStorage.setItem(themeStorageKey, choice);
  } catch {
    // Not remembered (storage refused); the page still switches.
  }
  applyTheme(choice);
}

/**
 * followSystemTheme applies the stored choice now and again whenever the
 * system's preference changes (it matters while the choice is "system").
 */
export function followSystemTheme(): () => void {
  applyTheme(storedThemeChoice());
  const mq = window.matchMedia(darkQuery);
  const onChange = () => applyTheme(storedThemeChoice());
  mq.addEventListener('change', onChange);
  return () => mq.removeEventListener('change', onChange);
}
