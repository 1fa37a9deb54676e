import { describe, expect, it } from 'vitest';
import { parseThemeChoice, resolveTheme } from './theme';

describe('theme', () => {
  it('remembers only the choices it knows, else follows the system', () => {
    expect(parseThemeChoice('dark')).toBe('dark');
    expect(parseThemeChoice('light')).toBe('light');
    expect(parseThemeChoice('system')).toBe('system');
    expect(parseThemeChoice('purple')).toBe('system');
    expect(parseThemeChoice(null)).toBe('system');
  });

  it('follows the system only when asked to', () => {
    expect(resolveTheme('system', true)).toBe('dark');
    expect(resolveTheme('system', false)).toBe('light');
    expect(resolveTheme('light', true)).toBe('light');
    expect(resolveTheme('dark', false)).toBe('dark');
  });
});
