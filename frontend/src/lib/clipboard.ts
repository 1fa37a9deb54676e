/**
 * copyText puts text on the clipboard. The Clipboard API exists only in a
 * secure context (HTTPS or loopback); a dashboard served over plain HTTP on
 * a LAN address falls back to a selected textarea and execCommand('copy').
 * The textarea goes inside the open modal dialog, if any: everything outside
 * it is inert and cannot be selected.
 */
export async function copyText(text: string): Promise<void> {
  if (window.isSecureContext && navigator.clipboard) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const host = document.querySelector('dialog[open]') ?? document.body;
  const ta = document.createElement('textarea');
  ta.value = text;
  ta.setAttribute('readonly', '');
  ta.style.position = 'fixed';
  ta.style.opacity = '0';
  host.appendChild(ta);
  const focused = document.activeElement as HTMLElement | null;
  ta.select();
  const ok = document.execCommand('copy');
  ta.remove();
  focused?.focus();
  if (!ok) throw new Error('The browser refused to copy: select the value and copy it by hand.');
}
