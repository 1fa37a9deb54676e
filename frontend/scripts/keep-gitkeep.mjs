// Vite empties dist/ on every build; the Go embed (`go:embed all:dist`) needs
// the directory to exist in a fresh clone, which git keeps only with a file.
import { writeFileSync } from 'node:fs';
writeFileSync(new URL('../dist/.gitkeep', import.meta.url), '');
