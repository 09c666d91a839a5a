/**
 * TLS files (docs/service.md, "Deploying on a network"): --tls-cert and
 * --tls-key read, and checked to parse and match, before a server or a
 * reload() uses them, so a bad file changes nothing.
 */
import { readFileSync } from 'node:fs';
import * as tls from 'node:tls';
import { OptionError } from '../../scoring';

interface TlsFiles {
  readonly cert: string;
  readonly key: string;
}

/** The files of the settings: both or neither (null). */
export function tlsFilesOf(settings: { readonly tlsCert?: string; readonly tlsKey?: string }): TlsFiles | null {
  if ((settings.tlsCert === undefined) !== (settings.tlsKey === undefined))
    throw new OptionError('tlsCert and tlsKey go together: give both or neither');
  return settings.tlsCert !== undefined && settings.tlsKey !== undefined
    ? { cert: settings.tlsCert, key: settings.tlsKey }
    : null;
}

/**
 * The certificate and key, read and checked: a file that cannot be read, or
 * a certificate and key that do not parse or do not match, are an
 * OptionError naming the flag.
 */
export function readTls(files: TlsFiles): { cert: Buffer; key: Buffer } {
  const read = (flag: string, file: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (error) {
      throw new OptionError(
        `${flag} ${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
      );
    }
  };
  const context = { cert: read('--tls-cert', files.cert), key: read('--tls-key', files.key) };
  try {
    tls.createSecureContext(context);
  } catch (error) {
    throw new OptionError(`--tls-cert/--tls-key: ${(error as Error).message}`);
  }
  return context;
}
