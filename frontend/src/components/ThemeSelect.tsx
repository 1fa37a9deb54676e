import { useState } from 'react';
import { saveThemeChoice, storedThemeChoice, themeChoices, type ThemeChoice } from '../lib/theme';

/** ThemeSelect lets the user follow the system's colour scheme or fix light or dark; the choice is remembered. */
export function ThemeSelect() {
  const [choice, setChoice] = useState<ThemeChoice>(storedThemeChoice);
  return (
    <label className="theme-select">
      <span className="visually-hidden">Theme</span>
      <select
        value={choice}
        onChange={(e) => {
          const c = e.target.value as ThemeChoice;
          setChoice(c);
          saveThemeChoice(c);
        }}
      >
        {themeChoices.map((t) => (
          <option key={t.value} value={t.value}>
            {t.label} theme
          </option>
        ))}
      </select>
    </label>
  );
}
