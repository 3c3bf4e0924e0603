// Runs once in every fresh context, before the call's code. Defines the web-style globals on
// top of a few host primitives (`host`), which stay in this closure and never reach the code.
// Returns the functions the host keeps for itself, `serialize` and `describe`, and `urlClasses`
// and `webClasses` for js/fetch.js.
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
  const ObjectGetOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
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
  const Uint16ArrayCtor = Uint16Array;
  const ArrayBufferCtor = ArrayBuffer;
  const ArrayBufferIsView = ArrayBuffer.isView;
  const call = Function.prototype.call.bind(Function.prototype.call);
  const DateToISOString = Date.prototype.toISOString;
  const RegExpToString = RegExp.prototype.toString;
  const SymbolToString = Symbol.prototype.toString;
  const ErrorToString = Error.prototype.toString;
  const StringPrototype = String.prototype;
  const MathMax = Math.max;
  const MathTrunc = Math.trunc;
  const DateNow = Date.now;
  const WeakMapCtor = WeakMap;
  const PromiseResolve = Promise.resolve.bind(Promise);
  const PromiseReject = Promise.reject.bind(Promise);

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
  // ---------------------------------------------------------------- DOMException
  // WebIDL's DOMException, for the errors the web throws as one (DataCloneError,
  // InvalidCharacterError): an Error with a name, a legacy code and the code constants.
  const kLegacyCodes = ['IndexSizeError', 'DOMStringSizeError', 'HierarchyRequestError',
    'WrongDocumentError', 'InvalidCharacterError', 'NoDataAllowedError', 'NoModificationAllowedError',
    'NotFoundError', 'NotSupportedError', 'InUseAttributeError', 'InvalidStateError', 'SyntaxError',
    'InvalidModificationError', 'NamespaceError', 'InvalidAccessError', 'ValidationError',
    'TypeMismatchError', 'SecurityError', 'NetworkError', 'AbortError', 'URLMismatchError',
    'QuotaExceededError', 'TimeoutError', 'InvalidNodeTypeError', 'DataCloneError'];
  const kLegacyConstants = ['INDEX_SIZE_ERR', 'DOMSTRING_SIZE_ERR', 'HIERARCHY_REQUEST_ERR',
    'WRONG_DOCUMENT_ERR', 'INVALID_CHARACTER_ERR', 'NO_DATA_ALLOWED_ERR',
    'NO_MODIFICATION_ALLOWED_ERR', 'NOT_FOUND_ERR', 'NOT_SUPPORTED_ERR', 'INUSE_ATTRIBUTE_ERR',
    'INVALID_STATE_ERR', 'SYNTAX_ERR', 'INVALID_MODIFICATION_ERR', 'NAMESPACE_ERR',
    'INVALID_ACCESS_ERR', 'VALIDATION_ERR', 'TYPE_MISMATCH_ERR', 'SECURITY_ERR', 'NETWORK_ERR',
    'ABORT_ERR', 'URL_MISMATCH_ERR', 'QUOTA_EXCEEDED_ERR', 'TIMEOUT_ERR', 'INVALID_NODE_TYPE_ERR',
    'DATA_CLONE_ERR'];
  class DOMException extends ErrorCtor {
    #name;
    constructor(message = '', options = 'Error') {
      super();
      this.#name = '' + (options !== null && typeof options === 'object' ? (options.name ?? 'Error') : options);
      // Own data properties, not WebIDL's prototype getters: V8 writes an uncaught error's
      // "name: message" (the call's error text) from data properties only.
      ObjectDefineProperty(this, 'name', {value: this.#name, configurable: true});
      ObjectDefineProperty(this, 'message', {value: '' + message, configurable: true});
    }
    get code() { return kLegacyCodes.indexOf(this.#name) + 1; }
  }
  for (let i = 0; i < kLegacyConstants.length; ++i) {
    for (const target of [DOMException, DOMException.prototype]) {
      ObjectDefineProperty(target, kLegacyConstants[i], {value: i + 1, enumerable: true});
    }
  }
  tag(DOMException, 'DOMException');
  define(global, 'DOMException', DOMException);

  const hostClone = host.structuredClone;
  define(global, 'structuredClone', {structuredClone(value, options = undefined) {
    if (arguments.length === 0) throw new TypeErrorCtor('structuredClone: 1 argument required');
    // The transfer list (ArrayBuffers; the host moves their bytes to the copies and detaches
    // them).
    const transfer = options !== undefined && options !== null && options.transfer !== undefined
        ? [...options.transfer] : [];
    try {
      return hostClone(value, transfer);
    } catch (error) {
      // V8 throws a plain Error; the web throws a DOMException named DataCloneError.
      if (error instanceof ErrorCtor && !(error instanceof RangeErrorCtor)) {
        throw new DOMException(error.message, 'DataCloneError');
      }
      throw error;
    }
  }}.structuredClone);

  // ---------------------------------------------------------------- atob / btoa
  const kB64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  function invalidCharacter(what) {
    return new DOMException(what, 'InvalidCharacterError');
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
  // The Encoding Standard's decoders. UTF-8 (the host's, which replaces malformed sequences as
  // the standard does), UTF-16LE/BE and windows-1252 (the decoder of every "latin1"/"ascii"/
  // "iso-8859-1" label) are here, with `{stream: true}`: V8 gives a context no decoder. Every
  // other encoding of the standard (the legacy single-byte and multi-byte ones, and the
  // "replacement" labels, which TextDecoder refuses) is js/vendor/encodings.js, @exodus/bytes's
  // decoders, which the host compiles on a call's first label not in the table below: neither
  // its code nor the standard's ~220 labels are in the globals snapshot, so only a call that
  // asks for one of them pays for it. ICU's converters are not used: they differ from the
  // standard's indexes (sandbox/README.md). The labels and the windows-1252 table here are the
  // standard's (encoding.spec.whatwg.org, "Encodings" and index-windows-1252).
  const kEncodingOfLabel = {__proto__: null};
  for (const [encoding, labels] of [
    ['utf-8', 'unicode-1-1-utf-8 unicode11utf8 unicode20utf8 utf-8 utf8 x-unicode20utf8'],
    ['utf-16le', 'csunicode iso-10646-ucs-2 ucs-2 unicode unicodefeff utf-16 utf-16le'],
    ['utf-16be', 'unicodefffe utf-16be'],
    ['windows-1252', 'ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 iso-ir-100 ' +
                     'iso8859-1 iso88591 iso_8859-1 iso_8859-1:1987 l1 latin1 us-ascii windows-1252 x-cp1252'],
  ]) {
    for (const label of labels.split(' ')) kEncodingOfLabel[label] = encoding;
  }
  // index-windows-1252 for bytes 0x80..0x9F; every other byte is its own code point.
  const kWindows1252High = [
    0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039,
    0x0152, 0x8D, 0x017D, 0x8F, 0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
    0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D, 0x017E, 0x0178];
  const kDecodeChunk = 8192;  // code units per String.fromCharCode call
  function fromCodeUnits(units) {
    let text = '';
    for (let i = 0; i < units.length; i += kDecodeChunk) {
      text += StringFromCharCode.apply(null, units.subarray(i, i + kDecodeChunk));
    }
    return text;
  }
  function decodingError(fatal, encoding) {
    if (fatal) throw new TypeErrorCtor('TextDecoder.decode: the input is not valid ' + encoding);
    return 0xFFFD;
  }
  // How many bytes at the end of `bytes` start a UTF-8 sequence that more bytes could complete
  // (0..3): those wait for the next chunk. Any other tail is decoded now.
  function utf8IncompleteTail(bytes) {
    const n = bytes.length;
    for (let back = 1; back <= 3 && back <= n; ++back) {
      const lead = bytes[n - back];
      if ((lead & 0xC0) === 0x80) continue;  // a continuation byte: look further back
      const need = lead >= 0xF0 && lead <= 0xF4 ? 4 : lead >= 0xE0 ? (lead <= 0xEF ? 3 : 0)
                 : lead >= 0xC2 ? 2 : 0;
      if (need <= back) return 0;
      if (back >= 2) {  // the second byte's range depends on the lead (the standard's bounds)
        const second = bytes[n - back + 1];
        const lower = lead === 0xE0 ? 0xA0 : lead === 0xF0 ? 0x90 : 0x80;
        const upper = lead === 0xED ? 0x9F : lead === 0xF4 ? 0x8F : 0xBF;
        if (second < lower || second > upper) return 0;
      }
      return back;
    }
    return 0;
  }
  // {encodingOf(label), makeDecoder(name, fatal)}: js/vendor/encodings.js, made on first use.
  // Its globalThis is an empty object, so that nothing the call put on the real one (a Buffer, a
  // TextDecoder of its own) changes how it decodes. Kept this small: every isolate deserialises
  // what is here.
  const hostLoadVendor = host.loadVendor;  // n -> a factory of js/vendor/ (globals_snapshot.h's Vendor)
  let legacyEncodings = null;
  class TextDecoder {
    #encoding;
    #ignoreBOM;
    #fatal;
    #legacy = null;  // a legacy encoding's decoder, (bytes, stream) -> text, with its state
    #pending = null;  // bytes of an incomplete sequence held over by {stream: true}
    #started = false;  // the BOM is looked for only at the start of a stream
    constructor(label = 'utf-8', options = {}) {
      // No label of these has a letter whose Unicode lower case differs from its ASCII one;
      // encodingOf matches the others as the standard says (ASCII case only).
      let encoding = kEncodingOfLabel[('' + label).replace(/^[\t\n\f\r ]+|[\t\n\f\r ]+$/g, '').toLowerCase()];
      const legacy = encoding === undefined;
      if (legacy) {
        encoding = (legacyEncodings ??= hostLoadVendor(2)(ObjectFreeze({__proto__: null})))
                       .encodingOf('' + label);
      }
      if (encoding === undefined) {
        throw new RangeErrorCtor('TextDecoder: the "' + label + '" encoding is not supported');
      }
      this.#encoding = encoding;
      this.#ignoreBOM = !!(options && options.ignoreBOM);
      this.#fatal = !!(options && options.fatal);
      if (legacy) this.#legacy = legacyEncodings.makeDecoder(encoding, this.#fatal);
    }
    get encoding() { return this.#encoding; }
    get fatal() { return this.#fatal; }
    get ignoreBOM() { return this.#ignoreBOM; }
    decode(input = undefined, options = undefined) {
      let bytes;
      if (input === undefined) bytes = new Uint8ArrayCtor(0);
      else if (input instanceof ArrayBufferCtor) bytes = new Uint8ArrayCtor(input);
      else if (ArrayBufferIsView(input)) bytes = new Uint8ArrayCtor(input.buffer, input.byteOffset, input.byteLength);
      else throw new TypeErrorCtor('TextDecoder.decode: input must be an ArrayBuffer or a view of one');
      const stream = !!(options && options.stream);
      // A legacy decoder keeps its own state across {stream: true} chunks, and drops it after a
      // call without; the standard looks for a BOM only in UTF-8 and UTF-16.
      if (this.#legacy !== null) return this.#legacy(bytes, stream);
      if (this.#pending !== null) {
        const joined = new Uint8ArrayCtor(this.#pending.length + bytes.length);
        joined.set(this.#pending);
        joined.set(bytes, this.#pending.length);
        bytes = joined;
        this.#pending = null;
      }
      let keep = 0;
      if (stream) {
        keep = this.#encoding === 'utf-8' ? utf8IncompleteTail(bytes)
             : this.#encoding === 'windows-1252' ? 0
             : (bytes.length % 2) + (bytes.length >= 2 && this.#highSurrogateLast(bytes) ? 2 : 0);
        if (keep > 0) {
          this.#pending = bytes.slice(bytes.length - keep);
          bytes = bytes.subarray(0, bytes.length - keep);
        }
      }
      let text;
      try {
        text = this.#decodeComplete(bytes, stream);
      } catch (error) {
        this.#pending = null;
        this.#started = false;
        throw error;
      }
      if (!this.#started && !this.#ignoreBOM && text.charCodeAt(0) === 0xFEFF) text = text.slice(1);
      this.#started = stream && (this.#started || text.length > 0);
      return text;
    }
    // Whether the last whole code unit of UTF-16 `bytes` (an odd byte aside) is a high surrogate.
    #highSurrogateLast(bytes) {
      const at = bytes.length - (bytes.length % 2) - 2;
      const unit = this.#encoding === 'utf-16le' ? bytes[at] | (bytes[at + 1] << 8)
                                                 : (bytes[at] << 8) | bytes[at + 1];
      return unit >= 0xD800 && unit <= 0xDBFF;
    }
    #decodeComplete(bytes, stream) {
      const fatal = this.#fatal;
      if (this.#encoding === 'utf-8') return hostUtf8Decode(bytes, fatal);
      if (this.#encoding === 'windows-1252') {
        const units = new Uint16ArrayCtor(bytes.length);
        for (let i = 0; i < bytes.length; ++i) {
          const b = bytes[i];
          units[i] = b >= 0x80 && b <= 0x9F ? kWindows1252High[b - 0x80] : b;
        }
        return fromCodeUnits(units);
      }
      const little = this.#encoding === 'utf-16le';
      const count = bytes.length >> 1;
      const odd = bytes.length % 2 === 1;  // only at the end of a stream: `stream` kept it back
      const units = new Uint16ArrayCtor(count + (odd ? 1 : 0));
      for (let i = 0; i < count; ++i) {
        units[i] = little ? bytes[2 * i] | (bytes[2 * i + 1] << 8) : (bytes[2 * i] << 8) | bytes[2 * i + 1];
      }
      for (let i = 0; i < count; ++i) {  // lone surrogates are errors
        const unit = units[i];
        if (unit >= 0xD800 && unit <= 0xDBFF && i + 1 < count &&
            units[i + 1] >= 0xDC00 && units[i + 1] <= 0xDFFF) {
          ++i;
        } else if (unit >= 0xD800 && unit <= 0xDFFF) {
          units[i] = decodingError(fatal, this.#encoding);
        }
      }
      if (odd) units[count] = decodingError(fatal, this.#encoding);
      return fromCodeUnits(units);
    }
  }
  tag(TextDecoder, 'TextDecoder');
  define(global, 'TextEncoder', TextEncoder);
  define(global, 'TextDecoder', TextDecoder);

  // ---------------------------------------------------------------- URL, URLSearchParams
  // The WHATWG URL Standard's reference implementation (npm whatwg-url, tr46 for IDNA), bundled
  // by scripts/vendor-whatwg-url into js/vendor/: a function of the TextEncoder and TextDecoder
  // above (the only globals it needs) and of a loader of its IDNA part (tr46.js, compiled on a
  // call's first non-ASCII host name). The host compiles it (host.loadVendor(0), from a code
  // cache the process made) on the first use of either global, not into the snapshot:
  // globals_snapshot.h says why. The gateway never trusts this parser: fetch() hands the host
  // the URL as the code wrote it, and gateway/url_policy.h decides the origin
  // (tests/e2e/url_origin.test.mjs shows the two agree, or the request is refused).
  let urlClasses = null;
  const makeUrlClasses = () =>
    (urlClasses ??= hostLoadVendor(0)(TextEncoder, TextDecoder, () => hostLoadVendor(1)()));
  for (const name of ['URL', 'URLSearchParams']) {
    // Until then an accessor that makes both classes and becomes a data property.
    ObjectDefineProperty(global, name, {
      configurable: true,
      enumerable: false,
      get() {
        makeUrlClasses();
        define(global, name, urlClasses[name]);
        return urlClasses[name];
      },
      set(value) { define(global, name, value); },
    });
  }

  // ---------------------------------------------------------------- js/web.js, on first use
  // Event, EventTarget, AbortController, AbortSignal, performance, crypto, Blob, File, FormData
  // and console.table: js/web.js, which the host compiles on the first use of any of them (as
  // URL's above), so that an isolate deserialises none of them until its call asks.
  // The builtins web.js uses, as captured above, before any code ran: web.js is compiled after
  // the call's code has run, when Object.keys or Promise.resolve may be the code's own.
  const primordials = {
    ObjectKeys, ObjectDefineProperty, ObjectGetPrototypeOf, ObjectGetOwnPropertyDescriptor,
    MathMin, MathMax, MathTrunc, TypeErrorCtor, SymbolIterator, SymbolToStringTag, MapCtor,
    SetCtor, DateNow, WeakMapCtor, Uint8ArrayCtor, ArrayBufferCtor, ArrayBufferIsView,
    PromiseResolve, PromiseReject,
  };
  const kit = {define, tag, call, describe, format, hostLog, hostSetTimeout, hostUtf8Encode,
               hostUtf8Decode, DOMException, console, primordials};
  let webClasses = null;
  const kWebGlobals = ['Event', 'EventTarget', 'AbortController', 'AbortSignal', 'performance',
                       'crypto', 'Crypto', 'SubtleCrypto', 'Blob', 'File', 'FormData'];
  const webAccessors = {__proto__: null};  // name -> the accessor below, while it is in place
  const makeWebClasses = () => {
    if (webClasses !== null) return webClasses;
    webClasses = hostLoadVendor(3)(host, kit);
    // Only where the accessor is still in place: what the code put on the global stays.
    for (const name of kWebGlobals) {
      const now = ObjectGetOwnPropertyDescriptor(global, name);
      if (now !== undefined && now.get === webAccessors[name]) define(global, name, webClasses[name]);
    }
    return webClasses;
  };
  for (const name of kWebGlobals) {
    const get = {get() { makeWebClasses(); return global[name]; }}.get;
    webAccessors[name] = get;
    ObjectDefineProperty(global, name, {
      configurable: true,
      enumerable: false,
      get,
      set(value) { define(global, name, value); },
    });
  }
  define(console, 'table', {table(...args) { makeWebClasses().table(...args); }}.table);

  // ---------------------------------------------------------------- the result as JSON
  // JSON.stringify's output (toJSON, BigInt as a decimal string, undefined, functions and symbols
  // left out or null, non-finite numbers null), written piece by piece and never past `budget`
  // characters (result_chars; 0: no limit): a value of any size costs what its first `budget`
  // characters cost, and a cut result is still JSON. Where it was cut, an array ends with a
  // string "…[cut: N more items]", an object with a member "…[cut]": "N more keys", a string
  // with "…[cut: N more characters]". Each open container keeps room for its closing marker.
  // `refs` (search): the spec's $ref targets met by this call, object -> "#/components/…"; the
  // second time one is met it is written {"$ref": pointer}, so shared schemas (Stripe's refs
  // expand combinatorially) come out once. Returns [text, cut].
  const kLevelReserve = 28;
  const NumberCtor = Number;
  const StringCtor = String;
  const BooleanCtor = Boolean;
  const ObjectPrototypeToString = Object.prototype.toString;
  const StringPrototypeSlice = String.prototype.slice;
  const ArrayPrototypeJoin = Array.prototype.join;
  const MapGet = Map.prototype.get;
  const MapSet = Map.prototype.set;
  const MapHas = Map.prototype.has;
  const kNotJson = {
    __proto__: null,
    '[object Response]': 'a Response: return await response.json(), .text() or .status',
    '[object Request]': 'a Request: return its url or method',
    '[object Headers]': 'Headers: return Object.fromEntries(headers)',
    '[object Map]': 'a Map, which JSON writes as {}: return Object.fromEntries(map)',
    '[object Set]': 'a Set, which JSON writes as {}: return [...set]',
    '[object Promise]': 'a Promise inside the value: await it first',
  };
  function serialize(value, budget, refs) {
    const limit = budget > 0 ? budget : Infinity;
    const out = [];
    let size = 0;
    let cut = false;
    const open = [];  // containers being written, for cycles
    const written = refs ? new MapCtor() : null;
    if (value !== null && typeof value === 'object') {
      const hint = kNotJson[call(ObjectPrototypeToString, value)];
      if (hint !== undefined && !ArrayIsArray(value)) {
        throw new TypeErrorCtor('the code returned ' + hint);
      }
    }
    const room = (depth) => limit - size - kLevelReserve * depth;
    function put(text) { out[out.length] = text; size += text.length; }
    // A leaf's JSON text, or undefined for what JSON leaves out.
    function leaf(v) {
      switch (typeof v) {
        case 'string': return JSONStringify(v);
        case 'number': return JSONStringify(v);
        case 'boolean': return v ? 'true' : 'false';
        case 'bigint': return JSONStringify('' + v);
        default: return undefined;
      }
    }
    function cutString(v, depth) {
      let keep = room(depth) - 40;
      while (keep > 0) {
        const text = JSONStringify(call(StringPrototypeSlice, v, 0, keep) + '…[cut: ' +
                                   (v.length - keep) + ' more characters]');
        if (text.length <= room(depth)) return text;
        keep = keep >> 1;
      }
      return undefined;
    }
    // 'done', 'partial' (written up to the cut), 'none' (nothing fitted), or 'skip' (undefined).
    function write(holder, key, v, depth) {
      if (v !== null && (typeof v === 'object' || typeof v === 'bigint') &&
          typeof v.toJSON === 'function') {
        v = v.toJSON(key);
      }
      if (v === null) {
        if (room(depth) < 4) return 'none';
        put('null');
        return 'done';
      }
      if (typeof v === 'object') {
        if (v instanceof NumberCtor) v = NumberCtor(v);
        else if (v instanceof StringCtor) v = StringCtor(v);
        else if (v instanceof BooleanCtor) v = JSONStringify(v) === 'true';
      }
      if (typeof v !== 'object') {
        const text = leaf(v);
        if (text === undefined) return 'skip';
        if (text.length <= room(depth)) {
          put(text);
          return 'done';
        }
        if (typeof v === 'string') {
          const shorter = cutString(v, depth);
          if (shorter !== undefined) {
            put(shorter);
            return 'partial';
          }
        }
        return 'none';
      }
      if (written !== null) {
        const pointer = call(MapGet, refs, v);
        if (pointer !== undefined) {
          if (call(MapHas, written, v)) {
            const text = '{"$ref":' + JSONStringify(pointer) + '}';
            if (text.length > room(depth)) return 'none';
            put(text);
            return 'done';
          }
          call(MapSet, written, v, true);
        }
      }
      for (let i = 0; i < open.length; ++i) {
        if (open[i] === v) throw new TypeErrorCtor('Converting circular structure to JSON');
      }
      if (room(depth + 1) < 2) return 'none';
      open[open.length] = v;
      const state = ArrayIsArray(v) ? writeArray(v, depth + 1) : writeObject(v, depth + 1);
      open.length -= 1;
      return state;
    }
    function writeArray(array, depth) {
      const count = array.length;
      put('[');
      for (let i = 0; i < count; ++i) {
        const mark = out.length;
        const before = size;
        if (i > 0) put(',');
        let state = write(array, '' + i, array[i], depth);
        if (state === 'skip') {
          if (room(depth) >= 4) {
            put('null');
            state = 'done';
          } else {
            state = 'none';
          }
        }
        if (state === 'done') continue;
        if (state === 'none') {
          out.length = mark;
          size = before;
        }
        const left = count - i - (state === 'partial' ? 1 : 0);
        if (left > 0) put((i > 0 || state === 'partial' ? ',' : '') + '"…[cut: ' + left + ' more items]"');
        put(']');
        cut = true;
        return 'partial';
      }
      put(']');
      return 'done';
    }
    function writeObject(object, depth) {
      const keys = ObjectKeys(object);
      const count = keys.length;
      put('{');
      let first = true;
      for (let i = 0; i < count; ++i) {
        const key = keys[i];
        const mark = out.length;
        const before = size;
        put((first ? '' : ',') + JSONStringify(key) + ':');
        const state = write(object, key, object[key], depth);
        if (state === 'done') {
          first = false;
          continue;
        }
        if (state === 'skip' || state === 'none') {
          out.length = mark;
          size = before;
          if (state === 'skip') continue;
        }
        const left = count - i - (state === 'partial' ? 1 : 0);
        if (left > 0) {
          put((first && state !== 'partial' ? '' : ',') + '"…[cut]":"' + left + ' more keys"');
        }
        put('}');
        cut = true;
        return 'partial';
      }
      put('}');
      return 'done';
    }
    const state = write({'': value}, '', value, 0);
    if (state === 'skip') return ['null', false];
    if (state === 'none') return ['"…[cut: the result does not fit in ' + budget + ' characters]"', true];
    if (state === 'partial') cut = true;
    return [call(ArrayPrototypeJoin, out, ''), cut];
  }
  // ---------------------------------------------------------------- spec.describe (search)
  // The map of $ref targets (object -> pointer) that the host's SpecView fills as the code reads
  // the spec: serialize writes a target met again as {"$ref"}, and spec.describe (js/describe.js,
  // compiled on a call's first use) names shared schemas by it. It stays in this closure.
  const specRefs = new MapCtor();
  serialize.specRefs = specRefs;

  return {serialize, describe: (value) => format([value]),
          urlClasses: {ifMade: () => urlClasses, make: makeUrlClasses},
          webClasses: {ifMade: () => webClasses, make: makeWebClasses}};
})
