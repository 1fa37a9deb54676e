/**
 * The dashboard's side of the built-in feeds: the drawing of each icon the
 * server names (Feed.icon), and the line saying what a feed needs.
 */

/**
 * builtinIconPaths maps the server's icon names to SVG path data on a
 * 24×24 grid, drawn as strokes. SVG rather than emoji or symbol glyphs:
 * those need a font that many machines (and headless browsers) lack, and
 * then show as empty boxes.
 */
export const builtinIconPaths: Record<string, string> = {
  // two arrows passing each other
  exchange: 'M4 8h14m-4-4 4 4-4 4M20 16H6m4-4-4 4 4 4',
  // a pediment on four columns
  landmark: 'M3 9l9-5 9 5M5 10v8m4.67-8v8m4.66-8v8M19 10v8M3 20h18',
  // a dial with its needle
  gauge: 'M4 16a8 8 0 1 1 16 0M12 16l4-5M4 20h16',
  // a shield
  shield: 'M12 3l7 3v5c0 5-3 8-7 10-4-2-7-5-7-10V6z',
  // stacked discs
  database: 'M5 6c0-1.7 3.1-3 7-3s7 1.3 7 3-3.1 3-7 3-7-1.3-7-3zm0 0v12c0 1.7 3.1 3 7 3s7-1.3 7-3V6M5 12c0 1.7 3.1 3 7 3s7-1.3 7-3',
  // a certificate with its seal
  certificate: 'M4 4h16v11H4zM7 8h10M7 11h6M15 15l-1 6 3-2 3 2-1-6',
  // a hook and line
  fish: 'M14 3v11a4 4 0 1 1-8 0M14 3h3M6 14l2-2',
  // a dish with its waves
  radar: 'M5 19a10 10 0 0 1 0-14M9 15a4.5 4.5 0 0 1 0-6M12 12l7-7M12 12h.01M19 19H5',
};

/** builtinIconPath is the SVG path of an icon name; unknown names get a plain ring. */
export function builtinIconPath(icon: string | null | undefined): string {
  return (icon && builtinIconPaths[icon]) || 'M12 7a5 5 0 1 0 0 10 5 5 0 1 0 0-10z';
}

/** needsLine says what a built-in feed needs; a missing key is named with the setting to use. */
export function needsLine(feed: { needs?: string | null; missingSetting?: string | null }): { text: string; missing: boolean } | null {
  if (feed.missingSetting) return { text: `Missing key: set ${feed.missingSetting} on the server, then restart it.`, missing: true };
  if (feed.needs) return { text: feed.needs, missing: false };
  return null;
}
