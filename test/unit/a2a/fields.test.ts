import fc from 'fast-check';
import { A2A_MEMBER_NAMES, misspelledAnswer, misspelledField } from '../../../src/a2a/fields';
import { classify } from '../../../src/a2a/classify';
import { A2A_OPTIONS } from '../../helpers/classify';

describe('misspelledField: members that fold onto an A2A name without being one of its spellings', () => {
  test('every spelling in the table passes, alone and all together', () => {
    for (const n of A2A_MEMBER_NAMES) expect(misspelledField({ [n]: 1 })).toBeUndefined();
    expect(misspelledField(Object.fromEntries(A2A_MEMBER_NAMES.map((n) => [n, { [n]: [n] }])))).toBeUndefined();
  });

  test('other letter cases, separators and Unicode folds of table names are found, at any depth', () => {
    const other = (n: string, how: number): string =>
      [
        n.toUpperCase(),
        n[0]!.toUpperCase() + n.slice(1),
        n.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`),
        `${n}_`,
        n.replace(/k/g, '\u212a').replace(/s/g, '\u017f'),
      ][how]!;
    fc.assert(
      fc.property(fc.constantFrom(...A2A_MEMBER_NAMES), fc.nat(4), fc.nat(3), (n, how, depth) => {
        const k = other(n, how);
        fc.pre(!A2A_MEMBER_NAMES.includes(k) && k !== n);
        let v: unknown = { [k]: 'x' };
        for (let i = 0; i < depth; i++) v = i % 2 === 0 ? { message: v } : [v];
        expect(misspelledField(v)).toBe(k);
      }),
      { numRuns: 2000 },
    );
  });

  test("free-form members are the sender's: metadata, data, extension params, scheme and scope maps", () => {
    expect(misspelledField({ message: { metadata: { TaskId: 1 }, parts: [{ data: { ID: 2 } }] } })).toBeUndefined();
    expect(
      misspelledField({
        capabilities: { extensions: [{ params: { Version: 1 } }] },
        securitySchemes: { Token: {} },
        securityRequirements: [{ schemes: { Token: { list: [] } } }],
      }),
    ).toBeUndefined();
    // Beside a free-form member, the names are checked.
    expect(misspelledField({ message: { metadata: {}, TaskId: 't' } })).toBe('TaskId');
  });

  test('names that fold onto nothing in A2A are not its business', () => {
    expect(misspelledField({ message: { Priority: 1, 'x-trace': 2, MyField: { Deep: true } } })).toBeUndefined();
  });
});

describe('misspelledAnswer', () => {
  test('an error object is not looked into; what is beside it is', () => {
    expect(misspelledAnswer({ jsonrpc: '2.0', id: 1, error: { code: -32001, Message: 'x', data: {} } })).toBeUndefined();
    expect(misspelledAnswer({ jsonrpc: '2.0', id: 1, error: { code: 1 }, Result: { task: { id: 't' } } })).toMatch(/Result/);
    expect(misspelledAnswer({ jsonrpc: '2.0', id: 1, result: { task: { Id: 't' } } })).toMatch(/Id/);
    expect(misspelledAnswer({ tasks: [{ id: 't' }], nextPageToken: '' })).toBeUndefined();
  });

  test("an `event: error` event's data: a bare error object is not looked into, anything beside one is", () => {
    expect(misspelledAnswer({ Code: 5, Message: 'x', DETAILS: [] }, true)).toBeUndefined();
    expect(misspelledAnswer({ jsonrpc: '2.0', id: 1, error: { Code: 1 } }, true)).toBeUndefined();
    expect(misspelledAnswer({ Task: { id: 't' } }, true)).toMatch(/Task/);
    expect(misspelledAnswer({ error: { code: 1 }, Task: { id: 't' } }, true)).toMatch(/Task/);
    expect(misspelledAnswer({ jsonrpc: '2.0', id: 1, Result: {} }, true)).toMatch(/Result/);
  });
});

describe('classification refuses other spellings wherever a request carries members', () => {
  test.each([
    ['a JSON-RPC body', 'POST', '/a2a/jsonrpc', { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { ID: 't-1' } }],
    ['a REST body', 'POST', '/a2a/rest/message:send', { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'x' }], TaskId: 't-1' } }],
    ['a REST query', 'GET', '/a2a/rest/tasks?ContextId=c-1', null],
    ['a REST query on a task route', 'GET', '/a2a/rest/tasks/t-1?HistoryLength=3', null],
    ['a REST query, kebab-case', 'GET', '/a2a/rest/tasks?context-id=c-1', null],
  ] as const)('%s', (_what, verb, path, body) => {
    const c = classify(
      {
        verb,
        path,
        headers: { 'a2a-version': '1.0', ...(body === null ? {} : { 'content-type': 'application/json' }) },
        body: body === null ? null : Buffer.from(JSON.stringify(body)),
      },
      A2A_OPTIONS,
    );
    expect(c.kind === 'reject' ? c.error.message : c.kind).toMatch(/is not spelled as A2A spells it/);
  });

  test('the exact spellings pass', () => {
    for (const path of ['/a2a/rest/tasks?contextId=c-1', '/a2a/rest/tasks/t-1?historyLength=3']) {
      expect(classify({ verb: 'GET', path, headers: { 'a2a-version': '1.0' }, body: null }, A2A_OPTIONS).kind).toBe('a2a');
    }
  });
});
