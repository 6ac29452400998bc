/**
 * JSON as the reference (nlohmann::json) writes and reads it: export's key order and number
 * forms, and the parser's messages for import lines that are not JSON. The expected texts
 * marked "reference test" are those the reference's own test suite asserts.
 */
import { describe, expect, it } from 'vitest';
import { compareCodePoints, floatText, referenceLine, referenceParseError, referenceStringify } from '../src/io/reference-json.js';

describe('floatText', () => {
  it.each([
    [3, '3.0'],
    [0.1, '0.1'],
    [-2.5, '-2.5'],
    [123.456, '123.456'],
    [0.0001, '0.0001'],
    [0.00001, '1e-05'],
    [1e14, '100000000000000.0'],
    [1e15, '1e+15'],
    [1.5e300, '1.5e+300'],
    [5e-324, '5e-324'],
    [-0, '-0.0'],
    [0, '0.0'],
    [Infinity, 'null'],
  ])('writes %s as %s', (x, text) => expect(floatText(x)).toBe(text));
});

describe('referenceLine', () => {
  it('sorts the keys of every object, id among them, and drops the spaces', () => {
    expect(referenceLine('{"z": 1, "id": "7", "a": {"y": [1.0, 2], "b": "x"}, "é": true, "ä": null}')).toBe('{"a":{"b":"x","y":[1.0,2]},"id":"7","z":1,"ä":null,"é":true}');
  });

  it('keeps integers of 64 bits exact and writes larger ones and exponents as floats', () => {
    expect(referenceLine('{"n":18446744073709551615,"m":-9223372036854775808,"o":18446744073709551616,"e":1E2,"z":-0,"f":2.50}')).toBe(
      '{"e":100.0,"f":2.5,"m":-9223372036854775808,"n":18446744073709551615,"o":1.8446744073709552e+19,"z":0}',
    );
  });

  it('writes strings as the reference escapes them, and keeps the last of a repeated key', () => {
    expect(referenceLine('{"s":"a\\u00e9\\n\\"\\/","k":1,"k":2}')).toBe('{"k":2,"s":"aé\\n\\"/"}');
  });

  it('writes each escape as JSON.stringify (and the reference) would, whichever form it came in', () => {
    expect(referenceLine('{"a":"\\u001f\\u001F\\u000a\\u00E9\\t\\/","b":"x\\"y\\\\"}')).toBe('{"a":"\\u001f\\u001f\\né\\t/","b":"x\\"y\\\\"}');
    expect(referenceLine('{"\\u0062":1,"a":2}')).toBe('{"a":2,"b":1}');
  });

  it('orders keys by code point, not by UTF-16 unit', () => {
    expect(referenceLine('{"😀":1,"\uFFFD":2}')).toBe('{"\uFFFD":2,"😀":1}');
    expect(['😀', '\uFFFD', 'b', 'a'].sort(compareCodePoints)).toEqual(['a', 'b', '\uFFFD', '😀']);
  });

  it('agrees with referenceStringify on a parsed document without floats', () => {
    const text = '{"id":"1","tags":["b","a"],"nested":{"z":null,"a":[{"y":1,"x":false}]},"n":-4}';
    expect(referenceStringify(JSON.parse(text))).toBe(referenceLine(text));
  });
});

describe('referenceParseError', () => {
  const at = (pos: string, msg: string) => `[json.exception.parse_error.101] parse error at ${pos}: syntax error while parsing ${msg}`;

  it('says what the reference says for an unfinished object (reference test)', () => {
    expect(referenceParseError('{')).toBe(at('line 1, column 2', 'object key - unexpected end of input; expected string literal'));
  });

  it('says what the reference says for a bad literal, with what was read since the last string (reference test)', () => {
    expect(referenceParseError('{"name": "foo", "age": asdadasd, "tags": [], "average": 34 }')).toBe(at('line 1, column 24', `value - invalid literal; last read: '"age": a'`));
  });

  it.each([
    ['{"a":1}x', at('line 1, column 8', `value - invalid literal; last read: '1}x'; expected end of input`)],
    ['{"a":1,}', at('line 1, column 8', `object key - unexpected '}'; expected string literal`)],
    ['{"a" 1}', at('line 1, column 6', `object separator - unexpected number literal; expected ':'`)],
    ['{"a":tru}', at('line 1, column 9', `value - invalid literal; last read: '"a":tru}'`)],
    ['{"a":"x\ty"}', at('line 1, column 8', `value - invalid string: control character U+0009 (HT) must be escaped to \\u0009 or \\t; last read: '"x<U+0009>'`)],
    ['{"a":-}', at('line 1, column 7', `value - invalid number; expected digit after '-'; last read: '-}'`)],
    ['{"é":x}', at('line 1, column 7', `value - invalid literal; last read: '"é":x'`)],
    ['[1 2]', at('line 1, column 4', `array - unexpected number literal; expected ']'`)],
    ['', '[json.exception.parse_error.101] parse error at line 1, column 1: attempting to parse an empty input; check that your input string or stream contains the expected JSON'],
    ['{"a":1e999}', "[json.exception.out_of_range.406] number overflow parsing '1e999'"],
  ])('reports %j as the reference parser does', (text, message) => expect(referenceParseError(text)).toBe(message));

  it('finds nothing wrong with JSON', () => {
    for (const ok of ['{}', '[]', '{"a":[1,2.5e-3,{"b":null}],"c":"\\ud83d\\ude00"}', ' 3 ']) expect(referenceParseError(ok)).toBeUndefined();
  });

  it('stays linear on a long hostile line', () => {
    const line = '{"a":' + '['.repeat(50_000) + '}';
    const t = Date.now();
    expect(referenceParseError(line)).toMatch(/^\[json\.exception\.parse_error\.101\] parse error at line 1, column 50006: syntax error while parsing value - unexpected '}'; expected '\[', '\{', or a literal$/);
    expect(Date.now() - t).toBeLessThan(2000);
  });
});
