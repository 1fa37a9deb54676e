import type { IocType } from '../gql/graphql';

/**
 * defang makes an indicator safe to paste into a ticket or a chat, where a
 * live link or address could be clicked or auto-fetched: http becomes hxxp,
 * the dots of a host [.] (a URL's path is left as it is), an IPv6 address's colons [:]. Hashes and rules
 * carry nothing clickable: null, so no Defang button is offered for them.
 */
export function defang(type: IocType, value: string): string | null {
  switch (type) {
    case 'DOMAIN':
      return value.replaceAll('.', '[.]');
    case 'IP':
      return value.includes(':') ? value.replaceAll(':', '[:]') : value.replaceAll('.', '[.]');
    case 'URL':
      return defangURL(value);
    default:
      return null;
  }
}

function defangURL(value: string): string {
  const m = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)(.*)$/is.exec(value);
  if (!m) return value.replaceAll('.', '[.]');
  const [, scheme, host, rest] = m;
  return `${scheme.replace(/^http/i, 'hxxp').replace(/^ftp/i, 'fxp')}://${host.replaceAll('.', '[.]')}${rest}`;
}
