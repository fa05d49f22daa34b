/**
 * A2A service parameters (spec v1.0 "Service Parameters"): `A2A-Version` and `A2A-Extensions` (v0.3:
 * `X-A2A-Extensions`), HTTP headers or gRPC metadata. They change what the agent does (an extension's
 * behaviour, the version's semantics), so the guardian sees them with the request
 * (`params.context.serviceParameters`) and the agent gets exactly the approved ones. Pure.
 */
import { proxyError, type ProxyError } from '../core/errors';
import { isObject } from '../core/json';

export interface ServiceParameters {
  /** The version the call is read under: the caller's A2A-Version, "0.3" when it sent none (spec: absent means 0.3). */
  readonly version: string;
  /** The extensions the caller asks for, as the agent's SDK reads them (trimmed, empty ones dropped, each once). */
  readonly extensions: readonly string[];
}

/** What the guardian sees (aos/schemas.ts ServiceParametersView is its schema). */
export interface ServiceParametersView {
  readonly 'A2A-Version': string;
  readonly 'A2A-Extensions': string[];
}

/** Where the guardian finds them: a member of the envelope's `params.context` (the AOS schema leaves its members open). */
export const SERVICE_PARAMETERS_MEMBER = 'serviceParameters';
export const DEFAULT_VERSION = '0.3';

type Headers = Readonly<Record<string, string | string[] | undefined>>;

/** An extension URI the proxy carries: printable ASCII without spaces or commas (the list separator). */
function validUri(s: string): boolean {
  if (s.length === 0 || s.length > 2048) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c <= 0x20 || c > 0x7e || c === 0x2c) return false;
  }
  return true;
}

/** A comma-separated list (repeated headers joined), as the SDK's Extensions.parseServiceParameter reads it. */
function parseList(raw: string | string[] | undefined): string[] | { problem: string } | undefined {
  if (raw === undefined) return undefined;
  const text = Array.isArray(raw) ? raw.join(',') : raw;
  const out: string[] = [];
  for (const part of text.split(',')) {
    const uri = part.trim();
    if (uri === '') continue;
    if (!validUri(uri)) return { problem: 'an extension in A2A-Extensions is not a URI without spaces' };
    if (!out.includes(uri)) out.push(uri);
  }
  return out;
}

const sameList = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((x) => b.includes(x));

/**
 * The call's service parameters from its headers (or gRPC metadata), given the version classification
 * read. Both extension headers are read, as SDK servers read one or the other (v0.3 routes prefer
 * X-A2A-Extensions, v1.0 routes read A2A-Extensions only): two lists that differ would mean one thing
 * to the guardian and another to some agent, and are refused.
 */
export function readServiceParameters(headers: Headers, version: string | undefined): ServiceParameters | { problem: string } {
  if (version !== undefined && !/^[\x21-\x2b\x2d-\x7e]{1,32}$/.test(version)) return { problem: 'A2A-Version must be one value' };
  const current = parseList(headers['a2a-extensions']);
  const legacy = parseList(headers['x-a2a-extensions']);
  if (current !== undefined && 'problem' in current) return current;
  if (legacy !== undefined && 'problem' in legacy) return legacy;
  if (current !== undefined && legacy !== undefined && !sameList(current, legacy)) {
    return { problem: 'A2A-Extensions and X-A2A-Extensions name different extensions' };
  }
  return { version: version ?? DEFAULT_VERSION, extensions: current ?? legacy ?? [] };
}

/** What the guardian sees, under the spec's names. */
export function serviceParametersView(p: ServiceParameters): ServiceParametersView {
  return { 'A2A-Version': p.version, 'A2A-Extensions': [...p.extensions] };
}

/**
 * The service parameters a guardian's modify approves: its `params.context.serviceParameters` when it
 * sent them (unchanged otherwise). The version cannot change: the request's form is bound to it.
 */
export function modifiedServiceParameters(original: ServiceParameters, modifiedParams: unknown): ServiceParameters | { problem: string } {
  const context = isObject(modifiedParams) ? modifiedParams.context : undefined;
  const sp = isObject(context) ? context[SERVICE_PARAMETERS_MEMBER] : undefined;
  if (sp === undefined) return original;
  if (!isObject(sp)) return { problem: 'modify: serviceParameters is not an object' };
  const version = sp['A2A-Version'];
  if (version !== undefined && version !== original.version) return { problem: 'modify changed A2A-Version' };
  const ext = sp['A2A-Extensions'];
  if (ext === undefined) return original;
  if (!Array.isArray(ext) || !ext.every((e): e is string => typeof e === 'string' && validUri(e))) {
    return { problem: 'modify: A2A-Extensions is not a list of URIs' };
  }
  const extensions: string[] = [];
  for (const e of ext) if (!extensions.includes(e)) extensions.push(e);
  return sameList(extensions, original.extensions) ? original : { version: original.version, extensions };
}

/** The proxy's own allow-lists (A2A_VERSIONS, A2A_EXTENSIONS; undefined: any), in A2A's standard errors. */
export function allowListRefusal(
  p: ServiceParameters,
  versions: readonly string[] | undefined,
  extensions: readonly string[] | undefined,
): ProxyError | undefined {
  if (versions !== undefined && !versions.includes(p.version)) {
    return proxyError('versionNotSupported', `A2A version '${p.version.slice(0, 32)}' is not supported. Supported versions: ${versions.join(', ')}`, {
      version: p.version.slice(0, 32),
    });
  }
  if (extensions !== undefined) {
    const refused = p.extensions.find((e) => !extensions.includes(e));
    if (refused !== undefined) return proxyError('invalidParams', `Extension not supported: ${refused.slice(0, 256)}`, { extension: refused.slice(0, 256) });
  }
  return undefined;
}

/** The extension headers the agent gets: the approved list under both names (each SDK route reads one of them). */
export function extensionHeaders(p: ServiceParameters): Record<string, string> {
  if (p.extensions.length === 0) return {};
  const value = p.extensions.join(', ');
  return { 'a2a-extensions': value, 'x-a2a-extensions': value };
}
