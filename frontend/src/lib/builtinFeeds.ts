/**
 * The dashboard's side of the built-in feeds: the glyph of each icon the
 * server names (Feed.icon), and the line saying what a feed needs.
 */

/** builtinIcons maps the server's icon names to a glyph. */
export const builtinIcons: Record<string, string> = {
  exchange: '⇄',
  landmark: '🏛',
  gauge: '◔',
  shield: '🛡',
  database: '🗄',
  certificate: '🔏',
  fish: '🎣',
  radar: '📡',
};

/** builtinGlyph is the glyph of an icon name; unknown names get a neutral dot. */
export function builtinGlyph(icon: string | null | undefined): string {
  return (icon && builtinIcons[icon]) || '●';
}

/** needsLine says what a built-in feed needs; a missing key is named with the setting to use. */
export function needsLine(feed: { needs?: string | null; missingSetting?: string | null }): { text: string; missing: boolean } | null {
  if (feed.missingSetting) return { text: `Missing key: set ${feed.missingSetting} on the server, then restart it.`, missing: true };
  if (feed.needs) return { text: feed.needs, missing: false };
  return null;
}
