// Runs once in every fresh context, before the call's code. Defines the web-style globals on
// top of a few host primitives (`host`), which stay in this closure and never reach the code.
// Returns the functions the host keeps for itself: `serialize` and `describe`.
// Everything the globals need is captured here first, so code that later replaces
// JSON.stringify or Array.prototype.join cannot change how results and logs are produced.
(function bootstrap(host, global) {
  'use strict';
  const ObjectKeys = Object.keys;
  const ObjectDefineProperty = Object.defineProperty;
  const ObjectGetPrototypeOf = Object.getPrototypeOf;
  const ObjectFreeze = Object.freeze;
  const ArrayIsArray = Array.isArray;
  const JSONStringify = JSON.stringify;
  const StringFromCharCode = String.fromCharCode;
  const MathMin = Math.min;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const ErrorCtor = Error;
  const SymbolIterator = Symbol.iterator;
  const SymbolToStringTag = Symbol.toStringTag;
  const MapCtor = Map;
  const SetCtor = Set;
  const DateCtor = Date;
  const RegExpCtor = RegExp;
  const Uint8ArrayCtor = Uint8Array;
  const ArrayBufferCtor = ArrayBuffer;
  const ArrayBufferIsView = ArrayBuffer.isView;
  const call = Function.prototype.call.bind(Function.prototype.call);
  const DateToISOString = Date.prototype.toISOString;
  const RegExpToString = RegExp.prototype.toString;
  const SymbolToString = Symbol.prototype.toString;
  const ErrorToString = Error.prototype.toString;
  const StringPrototype = String.prototype;
  const encodeURIComponentFn = encodeURIComponent;
  const decodeURIComponentFn = decodeURIComponent;

  function define(object, name, value) {
    ObjectDefineProperty(object, name, {value, writable: true, configurable: true, enumerable: false});
  }
  // Class prototypes get web-style non-enumerable methods and a toStringTag.
  function tag(ctor, name) {
    ObjectDefineProperty(ctor.prototype, SymbolToStringTag, {value: name, configurable: true});
  }

  // ---------------------------------------------------------------- console
  const kMaxDescribe = 8000;
  function describe(value, depth, seen) {
    switch (typeof value) {
      case 'string': return depth === 0 ? value : JSONStringify(value);
      case 'number': return value === 0 && 1 / value < 0 ? '-0' : '' + value;
      case 'bigint': return value + 'n';
      case 'boolean': return value ? 'true' : 'false';
      case 'undefined': return 'undefined';
      case 'symbol': return call(SymbolToString, value);
      case 'function': return '[Function: ' + (value.name || '(anonymous)') + ']';
    }
    if (value === null) return 'null';
    if (seen.indexOf(value) !== -1) return '[Circular]';
    if (value instanceof ErrorCtor) return call(ErrorToString, value);
    if (value instanceof DateCtor) {
      try { return call(DateToISOString, value); } catch { return 'Invalid Date'; }
    }
    if (value instanceof RegExpCtor) return call(RegExpToString, value);
    if (depth > 2) return ArrayIsArray(value) ? '[Array]' : '[Object]';
    seen.push(value);
    try {
      let parts = [];
      let budget = kMaxDescribe;
      const add = (text) => { parts.push(text); budget -= text.length + 2; return budget > 0; };
      if (ArrayIsArray(value) || ArrayBufferIsView(value)) {
        const n = value.length;
        for (let i = 0; i < n && i < 100; ++i) if (!add(describe(value[i], depth + 1, seen))) break;
        if (n > parts.length) parts.push('... ' + (n - parts.length) + ' more items');
        const prefix = ArrayIsArray(value) ? '' : (value.constructor && value.constructor.name || '') + '(' + n + ') ';
        return prefix + '[ ' + parts.join(', ') + ' ]';
      }
      if (value instanceof MapCtor) {
        for (const [k, v] of value) {
          if (!add(describe(k, depth + 1, seen) + ' => ' + describe(v, depth + 1, seen))) break;
        }
        return 'Map(' + value.size + ') { ' + parts.join(', ') + ' }';
      }
      if (value instanceof SetCtor) {
        for (const v of value) if (!add(describe(v, depth + 1, seen))) break;
        return 'Set(' + value.size + ') { ' + parts.join(', ') + ' }';
      }
      const keys = ObjectKeys(value);
      for (let i = 0; i < keys.length && i < 100; ++i) {
        const k = keys[i];
        const key = /^[A-Za-z_$][\w$]*$/.test(k) ? k : JSONStringify(k);
        if (!add(key + ': ' + describe(value[k], depth + 1, seen))) break;
      }
      if (keys.length > parts.length) parts.push('... ' + (keys.length - parts.length) + ' more keys');
      return parts.length ? '{ ' + parts.join(', ') + ' }' : '{}';
    } finally {
      seen.pop();
    }
  }
  function format(args) {
    let text = '';
    for (let i = 0; i < args.length; ++i) {
      if (i) text += ' ';
      text += describe(args[i], 0, []);
      if (text.length > kMaxDescribe) break;
    }
    return text;
  }
  const hostLog = host.log;
  const console = {};
  const levels = ['log', 'info', 'warn', 'error', 'debug'];
  for (let i = 0; i < levels.length; ++i) {
    const level = i;
    // Method shorthand: no prototype, not a constructor.
    const method = {[levels[i]](...args) { hostLog(level, format(args)); }}[levels[i]];
    define(console, levels[i], method);
  }
  define(global, 'console', console);

  // ---------------------------------------------------------------- timers, microtasks
  const hostSetTimeout = host.setTimeout;
  const hostClearTimeout = host.clearTimeout;
  const hostQueueMicrotask = host.queueMicrotask;
  define(global, 'setTimeout', {setTimeout(callback, delay = 0, ...args) {
    if (typeof callback !== 'function') throw new TypeErrorCtor('setTimeout: callback must be a function');
    delay = +delay;
    return hostSetTimeout(callback, delay > 0 ? delay : 0, args);
  }}.setTimeout);
  define(global, 'clearTimeout', {clearTimeout(id) {
    if (typeof id === 'number') hostClearTimeout(id);
  }}.clearTimeout);
  define(global, 'queueMicrotask', {queueMicrotask(callback) {
    if (typeof callback !== 'function') throw new TypeErrorCtor('queueMicrotask: callback must be a function');
    hostQueueMicrotask(callback);
  }}.queueMicrotask);
  const hostClone = host.structuredClone;
  define(global, 'structuredClone', {structuredClone(value) {
    if (arguments.length === 0) throw new TypeErrorCtor('structuredClone: 1 argument required');
    try {
      return hostClone(value);
    } catch (error) {
      // V8 throws a plain Error; the web names it DataCloneError.
      if (error instanceof ErrorCtor) ObjectDefineProperty(error, 'name', {value: 'DataCloneError', configurable: true, writable: true});
      throw error;
    }
  }}.structuredClone);

  // ---------------------------------------------------------------- atob / btoa
  const kB64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  function invalidCharacter(what) {
    const e = new ErrorCtor(what);
    ObjectDefineProperty(e, 'name', {value: 'InvalidCharacterError', configurable: true, writable: true});
    return e;
  }
  define(global, 'btoa', {btoa(data) {
    if (arguments.length === 0) throw new TypeErrorCtor('btoa: 1 argument required');
    const s = '' + data;
    let out = '';
    for (let i = 0; i < s.length; i += 3) {
      const a = s.charCodeAt(i), b = s.charCodeAt(i + 1), c = s.charCodeAt(i + 2);
      if (a > 255 || b > 255 || c > 255) throw invalidCharacter('btoa: the string contains characters outside of the Latin1 range');
      const n = (a << 16) | ((b || 0) << 8) | (c || 0);
      out += kB64[n >> 18] + kB64[(n >> 12) & 63] +
             (i + 1 < s.length ? kB64[(n >> 6) & 63] : '=') + (i + 2 < s.length ? kB64[n & 63] : '=');
    }
    return out;
  }}.btoa);
  define(global, 'atob', {atob(data) {
    if (arguments.length === 0) throw new TypeErrorCtor('atob: 1 argument required');
    let s = ('' + data).replace(/[\t\n\f\r ]/g, '');
    if (s.length % 4 === 0) s = s.replace(/==?$/, '');
    if (s.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(s)) throw invalidCharacter('atob: the string is not correctly encoded');
    let out = '', bits = 0, acc = 0;
    for (let i = 0; i < s.length; ++i) {
      acc = (acc << 6) | kB64.indexOf(s[i]);
      bits += 6;
      if (bits >= 8) { bits -= 8; out += StringFromCharCode((acc >> bits) & 255); }
    }
    return out;
  }}.atob);

  // ---------------------------------------------------------------- TextEncoder / TextDecoder
  const hostUtf8Length = host.utf8Length;
  const hostUtf8Write = host.utf8Write;
  const hostUtf8Decode = host.utf8Decode;
  // The bytes are allocated here, where a refused allocation is a RangeError.
  function hostUtf8Encode(text) {
    const bytes = new Uint8ArrayCtor(hostUtf8Length(text));
    hostUtf8Write(text, bytes);
    return bytes;
  }
  class TextEncoder {
    get encoding() { return 'utf-8'; }
    encode(input = '') { return hostUtf8Encode('' + input); }
    encodeInto(source, destination) {
      const bytes = hostUtf8Encode('' + source);
      // Whole code points only: never split a UTF-8 sequence at the end of destination.
      let written = MathMin(bytes.length, destination.length);
      while (written > 0 && written < bytes.length && (bytes[written] & 0xC0) === 0x80) --written;
      destination.set(bytes.subarray(0, written));
      const read = hostUtf8Decode(bytes.subarray(0, written)).length;
      return {read, written};
    }
  }
  tag(TextEncoder, 'TextEncoder');
  class TextDecoder {
    #ignoreBOM;
    #fatal;
    constructor(label = 'utf-8', options = {}) {
      const l = ('' + label).trim().toLowerCase();
      if (l !== 'utf-8' && l !== 'utf8' && l !== 'unicode-1-1-utf-8') {
        throw new RangeErrorCtor('TextDecoder: only utf-8 is supported, not "' + label + '"');
      }
      this.#ignoreBOM = !!(options && options.ignoreBOM);
      this.#fatal = !!(options && options.fatal);
    }
    get encoding() { return 'utf-8'; }
    get fatal() { return this.#fatal; }
    get ignoreBOM() { return this.#ignoreBOM; }
    decode(input = new Uint8ArrayCtor(0)) {
      let bytes;
      if (input instanceof ArrayBufferCtor) bytes = new Uint8ArrayCtor(input);
      else if (ArrayBufferIsView(input)) bytes = new Uint8ArrayCtor(input.buffer, input.byteOffset, input.byteLength);
      else throw new TypeErrorCtor('TextDecoder.decode: input must be an ArrayBuffer or a view of one');
      let text = hostUtf8Decode(bytes, this.#fatal);
      if (!this.#ignoreBOM && text.charCodeAt(0) === 0xFEFF) text = text.slice(1);
      return text;
    }
  }
  tag(TextDecoder, 'TextDecoder');
  define(global, 'TextEncoder', TextEncoder);
  define(global, 'TextDecoder', TextDecoder);

  // ---------------------------------------------------------------- URL, URLSearchParams
  const url = host.urlFactory(global, {encodeURIComponentFn, decodeURIComponentFn, define, tag});
  define(global, 'URL', url.URL);
  define(global, 'URLSearchParams', url.URLSearchParams);

  // ---------------------------------------------------------------- what the host keeps
  function replacer(key, value) {
    return typeof value === 'bigint' ? '' + value : value;
  }
  function serialize(value) {
    const text = JSONStringify(value, replacer);
    return text === undefined ? 'null' : text;
  }
  return {serialize, describe: (value) => format([value])};
})
