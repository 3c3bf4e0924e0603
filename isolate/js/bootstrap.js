// Runs once in every fresh context, before the call's code. Defines the web-style globals on
// top of a few host primitives (`host`), which stay in this closure and never reach the code.
// Returns the functions the host keeps for itself, `serialize` and `describe`, and
// `urlClasses` for js/fetch.js.
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
  const MathMax = Math.max;
  const MathTrunc = Math.trunc;
  const ObjectGetOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const WeakMapCtor = WeakMap;
  const PromiseResolve = Promise.resolve.bind(Promise);
  const PromiseReject = Promise.reject.bind(Promise);
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

  // ---------------------------------------------------------------- Event, EventTarget
  // The DOM Standard's dispatch reduced to one target (no tree, no capture, no bubbling): what
  // AbortSignal needs, and what code that listens to one expects (addEventListener with `once`
  // and `signal`, handleEvent objects, onabort). A listener that throws does not stop the
  // others; its error is logged, as node reports it.
  const kEventInit = {__proto__: null};
  class Event {
    #type; #bubbles; #cancelable; #defaultPrevented = false; #target = null; #current = null;
    #timeStamp; #stop = false;
    constructor(type, init = undefined) {
      if (arguments.length === 0) throw new TypeErrorCtor('Event: 1 argument required');
      this.#type = '' + type;
      const options = init === undefined || init === null ? kEventInit : init;
      this.#bubbles = !!options.bubbles;
      this.#cancelable = !!options.cancelable;
      this.#timeStamp = performanceNow();
    }
    get type() { return this.#type; }
    get bubbles() { return this.#bubbles; }
    get cancelable() { return this.#cancelable; }
    get defaultPrevented() { return this.#cancelable && this.#defaultPrevented; }
    get target() { return this.#target; }
    get currentTarget() { return this.#current; }
    get srcElement() { return this.#target; }
    get timeStamp() { return this.#timeStamp; }
    get isTrusted() { return false; }
    get eventPhase() { return this.#current === null ? 0 : 2; }
    get composed() { return false; }
    get returnValue() { return !this.defaultPrevented; }
    composedPath() { return this.#current === null ? [] : [this.#current]; }
    preventDefault() { this.#defaultPrevented = true; }
    stopPropagation() {}
    stopImmediatePropagation() { this.#stop = true; }
    static _begin(event, target) { event.#target = event.#target ?? target; event.#current = target; event.#stop = false; }
    static _end(event) { event.#current = null; }
    static _stopped(event) { return event.#stop; }
  }
  for (const [name, value] of [['NONE', 0], ['CAPTURING_PHASE', 1], ['AT_TARGET', 2], ['BUBBLING_PHASE', 3]]) {
    ObjectDefineProperty(Event, name, {value, enumerable: true});
    ObjectDefineProperty(Event.prototype, name, {value, enumerable: true});
  }
  tag(Event, 'Event');
  const kListeners = new WeakMapCtor();  // target -> [{type, callback, once, removed}]
  class EventTarget {
    addEventListener(type, callback, options = undefined) {
      if (arguments.length < 2) throw new TypeErrorCtor('addEventListener: 2 arguments required');
      if (callback === null || callback === undefined) return;
      if (typeof callback !== 'function' && typeof callback !== 'object') {
        throw new TypeErrorCtor('addEventListener: the listener must be a function or an object');
      }
      const once = typeof options === 'object' && options !== null && !!options.once;
      const signal = typeof options === 'object' && options !== null ? options.signal : undefined;
      if (signal !== undefined && !(signal instanceof AbortSignal)) {
        throw new TypeErrorCtor('addEventListener: options.signal must be an AbortSignal');
      }
      if (signal !== undefined && signal.aborted) return;
      type = '' + type;
      let list = kListeners.get(this);
      if (list === undefined) kListeners.set(this, list = []);
      for (const entry of list) if (entry.type === type && entry.callback === callback) return;
      const entry = {type, callback, once, removed: false};
      list.push(entry);
      if (signal !== undefined) {
        signal.addEventListener('abort', () => this.removeEventListener(type, callback));
      }
    }
    removeEventListener(type, callback, options = undefined) {
      const list = kListeners.get(this);
      if (list === undefined) return;
      type = '' + type;
      for (let i = 0; i < list.length; ++i) {
        if (list[i].type === type && list[i].callback === callback) {
          list[i].removed = true;
          list.splice(i, 1);
          return;
        }
      }
    }
    dispatchEvent(event) {
      if (!(event instanceof Event)) throw new TypeErrorCtor('dispatchEvent: the argument must be an Event');
      Event._begin(event, this);
      try {
        const handler = this._handler ? this._handler(event.type) : null;
        const list = (kListeners.get(this) || []).slice();
        // An event handler attribute (onabort) runs in the place its first setting took; here,
        // with no other ordering to keep, before the listeners added after it (the usual case).
        const all = handler ? [{type: event.type, callback: handler, once: false, removed: false}].concat(list) : list;
        for (const entry of all) {
          if (entry.removed || entry.type !== event.type) continue;
          if (entry.once) this.removeEventListener(entry.type, entry.callback);
          try {
            if (typeof entry.callback === 'function') call(entry.callback, this, event);
            else if (typeof entry.callback.handleEvent === 'function') call(entry.callback.handleEvent, entry.callback, event);
          } catch (error) {
            hostLog(3, 'Uncaught (in an event listener) ' + format([error]));
          }
          if (Event._stopped(event)) break;
        }
      } finally {
        Event._end(event);
      }
      return !event.defaultPrevented;
    }
  }
  tag(EventTarget, 'EventTarget');
  define(global, 'Event', Event);
  define(global, 'EventTarget', EventTarget);

  // ---------------------------------------------------------------- AbortController, AbortSignal
  // The DOM Standard's: an abort runs the signal's algorithms (fetch's: reject and drop the
  // request), then fires "abort"; dependent signals (AbortSignal.any) abort with their source.
  const kAbortKey = {};
  class AbortSignal extends EventTarget {
    #aborted = false; #reason = undefined; #onabort = null;
    #algorithms = [];
    #dependents = [];  // signals made by AbortSignal.any over this one
    #sources = null;  // of a signal made by AbortSignal.any: the signals it follows, none of them dependent
    constructor(key = undefined) {
      if (key !== kAbortKey) throw new TypeErrorCtor('Illegal constructor');
      super();
    }
    get aborted() { return this.#aborted; }
    get reason() { return this.#reason; }
    get onabort() { return this.#onabort; }
    set onabort(handler) { this.#onabort = typeof handler === 'function' || (typeof handler === 'object' && handler !== null) ? handler : null; }
    _handler(type) { return type === 'abort' && typeof this.#onabort === 'function' ? this.#onabort : null; }
    throwIfAborted() { if (this.#aborted) throw this.#reason; }
    // What fetch() runs on abort; a no-op once aborted.
    _onAbort(algorithm) { if (!this.#aborted) this.#algorithms.push(algorithm); }
    _offAbort(algorithm) { const i = this.#algorithms.indexOf(algorithm); if (i !== -1) this.#algorithms.splice(i, 1); }
    static _signalAbort(signal, reason) {
      if (signal.#aborted) return;
      signal.#aborted = true;
      signal.#reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason;
      const algorithms = signal.#algorithms;
      signal.#algorithms = [];
      const dependents = signal.#dependents;
      signal.#dependents = [];
      // The dependents are marked aborted before any event fires, as the standard says.
      const newly = [];
      for (const dependent of dependents) {
        if (dependent.#aborted) continue;
        dependent.#aborted = true;
        dependent.#reason = signal.#reason;
        newly.push(dependent);
      }
      for (const algorithm of algorithms) algorithm(signal.#reason);
      signal.dispatchEvent(new Event('abort'));
      for (const dependent of newly) {
        const dependentAlgorithms = dependent.#algorithms;
        dependent.#algorithms = [];
        for (const algorithm of dependentAlgorithms) algorithm(dependent.#reason);
        dependent.dispatchEvent(new Event('abort'));
      }
    }
    static abort(reason = undefined) {
      const signal = new AbortSignal(kAbortKey);
      AbortSignal._signalAbort(signal, reason);
      return signal;
    }
    static timeout(milliseconds) {
      const ms = +milliseconds;
      if (!(ms >= 0) || ms > 9007199254740991) throw new TypeErrorCtor('AbortSignal.timeout: the delay must be a non-negative number');
      const signal = new AbortSignal(kAbortKey);
      hostSetTimeout(() => AbortSignal._signalAbort(signal, new DOMException('The operation was aborted due to timeout', 'TimeoutError')), ms, []);
      return signal;
    }
    // As the standard's "create a dependent abort signal": a dependent signal follows the
    // sources of the signals it is given, never a chain of them, so aborting one source reaches
    // every signal made from it in one step.
    static any(signals) {
      const signal = new AbortSignal(kAbortKey);
      const given = [...signals];
      for (const source of given) {
        if (!(source instanceof AbortSignal)) throw new TypeErrorCtor('AbortSignal.any: every element must be an AbortSignal');
      }
      for (const source of given) {
        if (source.#aborted) { AbortSignal._signalAbort(signal, source.#reason); return signal; }
      }
      signal.#sources = [];
      for (const source of given) {
        for (const followed of source.#sources === null ? [source] : source.#sources) {
          if (signal.#sources.indexOf(followed) !== -1) continue;
          signal.#sources.push(followed);
          followed.#dependents.push(signal);
        }
      }
      return signal;
    }
  }
  tag(AbortSignal, 'AbortSignal');
  class AbortController {
    #signal = new AbortSignal(kAbortKey);
    get signal() { return this.#signal; }
    abort(reason = undefined) { AbortSignal._signalAbort(this.#signal, reason); }
  }
  tag(AbortController, 'AbortController');
  define(global, 'AbortSignal', AbortSignal);
  define(global, 'AbortController', AbortController);

  // ---------------------------------------------------------------- performance
  // Milliseconds since the call's context was made, in whole milliseconds: no finer than
  // Date.now(), the clock the sandbox already gives (a finer one is a timer for side channels).
  // Never goes backwards, even when the wall clock does.
  const DateNow = DateCtor.now;
  let timeOrigin = DateNow();
  let lastNow = 0;
  function performanceNow() {
    const now = DateNow() - timeOrigin;
    if (now > lastNow) lastNow = now;
    return lastNow;
  }
  const performance = {};
  define(performance, 'now', {now() { return performanceNow(); }}.now);
  ObjectDefineProperty(performance, 'timeOrigin', {get() { return timeOrigin; }, configurable: true, enumerable: true});
  define(performance, 'toJSON', {toJSON() { return {timeOrigin}; }}.toJSON);
  ObjectDefineProperty(performance, SymbolToStringTag, {value: 'Performance', configurable: true});
  define(global, 'performance', performance);

  // ---------------------------------------------------------------- crypto
  // Random bytes from the kernel's CSPRNG (getrandom(2), in the host) and digests from OpenSSL
  // (node's, in the host): the Web Crypto API's getRandomValues, randomUUID and subtle.digest.
  const hostRandomFill = host.randomFill;
  const hostDigest = host.digest;
  const kDigests = {__proto__: null, 'sha-1': [0, 20], 'sha-256': [1, 32], 'sha-384': [2, 48], 'sha-512': [3, 64]};
  const TypedArrayPrototype = ObjectGetPrototypeOf(Uint8ArrayCtor.prototype);
  const TypedArrayTag = ObjectGetOwnPropertyDescriptor(TypedArrayPrototype, SymbolToStringTag).get;
  const kIntegerArrays = ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array',
                          'Int32Array', 'Uint32Array', 'BigInt64Array', 'BigUint64Array'];
  function getRandomValues(array) {
    const kind = ArrayBufferIsView(array) ? call(TypedArrayTag, array) : undefined;
    if (kind === undefined || kIntegerArrays.indexOf(kind) === -1) {
      throw new DOMException('The data argument must be an integer-type TypedArray', 'TypeMismatchError');
    }
    if (array.byteLength > 65536) {
      throw new DOMException('The ArrayBufferView\'s byte length (' + array.byteLength + ') exceeds the number of bytes of entropy available via this API (65536)', 'QuotaExceededError');
    }
    hostRandomFill(new Uint8ArrayCtor(array.buffer, array.byteOffset, array.byteLength));
    return array;
  }
  const kHex = [];
  for (let i = 0; i < 256; ++i) kHex.push((i < 16 ? '0' : '') + i.toString(16));
  function randomUUID() {
    const b = new Uint8ArrayCtor(16);
    hostRandomFill(b);
    b[6] = (b[6] & 0x0F) | 0x40;  // version 4
    b[8] = (b[8] & 0x3F) | 0x80;  // variant 10
    let out = '';
    for (let i = 0; i < 16; ++i) out += (i === 4 || i === 6 || i === 8 || i === 10 ? '-' : '') + kHex[b[i]];
    return out;
  }
  function bufferSourceBytes(data, what) {
    if (data instanceof ArrayBufferCtor) return new Uint8ArrayCtor(data);
    if (ArrayBufferIsView(data)) return new Uint8ArrayCtor(data.buffer, data.byteOffset, data.byteLength);
    throw new TypeErrorCtor(what + ': the data must be an ArrayBuffer or an ArrayBufferView');
  }
  class SubtleCrypto {
    constructor(key = undefined) { if (key !== kAbortKey) throw new TypeErrorCtor('Illegal constructor'); }
    digest(algorithm, data) {
      try {
        const name = typeof algorithm === 'object' && algorithm !== null ? algorithm.name : algorithm;
        if (name === undefined) throw new TypeErrorCtor('digest: the algorithm has no name');
        const known = kDigests[('' + name).toLowerCase()];
        const bytes = bufferSourceBytes(data, 'digest');
        if (known === undefined) {
          return PromiseReject(new DOMException('Unrecognized algorithm name', 'NotSupportedError'));
        }
        const out = new Uint8ArrayCtor(known[1]);
        hostDigest(known[0], bytes, out);
        return PromiseResolve(out.buffer);
      } catch (error) {
        return PromiseReject(error);
      }
    }
  }
  tag(SubtleCrypto, 'SubtleCrypto');
  class Crypto {
    #subtle = new SubtleCrypto(kAbortKey);
    constructor(key = undefined) { if (key !== kAbortKey) throw new TypeErrorCtor('Illegal constructor'); }
    get subtle() { return this.#subtle; }
    getRandomValues(array) {
      if (arguments.length === 0) throw new TypeErrorCtor('getRandomValues: 1 argument required');
      return getRandomValues(array);
    }
    randomUUID() { return randomUUID(); }
  }
  tag(Crypto, 'Crypto');
  define(global, 'crypto', new Crypto(kAbortKey));
  define(global, 'Crypto', Crypto);
  define(global, 'SubtleCrypto', SubtleCrypto);

  // ---------------------------------------------------------------- Blob, File, FormData
  // The File API's Blob over bytes in memory the code owns (the ArrayBuffer budget counts them:
  // a huge Blob is a RangeError, as any huge buffer), without streams; FormData's entry list,
  // which fetch() sends as multipart/form-data.
  const kBlobKey = {};
  const kAsciiPrintable = /^[\x20-\x7E]*$/;
  function blobType(type) {
    const t = type === undefined ? '' : '' + type;
    return kAsciiPrintable.test(t) ? t.toLowerCase() : '';
  }
  class Blob {
    #bytes; #type;
    constructor(parts = undefined, options = undefined) {
      if (parts === kBlobKey) {  // Blob._of: bytes already owned
        this.#bytes = options.bytes;
        this.#type = options.type;
        return;
      }
      const chunks = [];
      let size = 0;
      if (parts !== undefined && parts !== null) {
        if (typeof parts !== 'object' || typeof parts[SymbolIterator] !== 'function') {
          throw new TypeErrorCtor('Blob: the parts must be a sequence');
        }
        for (const part of parts) {
          let bytes;
          if (part instanceof Blob) bytes = part.#bytes;
          else if (part instanceof ArrayBufferCtor) bytes = new Uint8ArrayCtor(part);
          else if (ArrayBufferIsView(part)) bytes = new Uint8ArrayCtor(part.buffer, part.byteOffset, part.byteLength);
          else bytes = hostUtf8Encode('' + part);
          chunks.push(bytes);
          size += bytes.length;
        }
      }
      const bytes = new Uint8ArrayCtor(size);
      let at = 0;
      for (const chunk of chunks) { bytes.set(chunk, at); at += chunk.length; }
      this.#bytes = bytes;
      this.#type = blobType(options !== undefined && options !== null ? options.type : undefined);
    }
    static _of(bytes, type) { return new Blob(kBlobKey, {bytes, type: blobType(type)}); }
    static _bytes(blob) { return blob.#bytes; }
    get size() { return this.#bytes.length; }
    get type() { return this.#type; }
    slice(start = undefined, end = undefined, contentType = undefined) {
      const size = this.#bytes.length;
      const clamp = (n, fallback) => {
        if (n === undefined) return fallback;
        n = MathTrunc(+n) || 0;
        return n < 0 ? MathMax(size + n, 0) : MathMin(n, size);
      };
      const from = clamp(start, 0);
      const to = clamp(end, size);
      return Blob._of(this.#bytes.slice(from, MathMax(from, to)), contentType);
    }
    arrayBuffer() { return PromiseResolve(this.#bytes.slice().buffer); }
    bytes() { return PromiseResolve(this.#bytes.slice()); }
    text() { return PromiseResolve(hostUtf8Decode(this.#bytes)); }
  }
  tag(Blob, 'Blob');
  class File extends Blob {
    #name; #lastModified;
    constructor(parts, name, options = undefined) {
      if (arguments.length < 2) throw new TypeErrorCtor('File: 2 arguments required');
      super(parts, options);
      this.#name = '' + name;
      const last = options !== undefined && options !== null ? options.lastModified : undefined;
      this.#lastModified = last === undefined ? DateNow() : MathTrunc(+last) || 0;
    }
    get name() { return this.#name; }
    get lastModified() { return this.#lastModified; }
  }
  tag(File, 'File');
  define(global, 'Blob', Blob);
  define(global, 'File', File);

  class FormData {
    #entries = [];  // [name, string or File]
    constructor(form = undefined) {
      if (form !== undefined) throw new TypeErrorCtor('FormData: there are no form elements here');
    }
    static #entry(name, value, filename, count) {
      if (count < 2) throw new TypeErrorCtor('FormData: 2 arguments required');
      name = '' + name;
      if (value instanceof Blob) {
        if (!(value instanceof File) || filename !== undefined) {
          value = new File([value], filename !== undefined ? '' + filename : value instanceof File ? value.name : 'blob',
                           {type: value.type, lastModified: value instanceof File ? value.lastModified : undefined});
        }
        return [name, value];
      }
      if (count > 2) throw new TypeErrorCtor('FormData: a filename is only for a Blob value');
      return [name, '' + value];
    }
    append(name, value, filename = undefined) { this.#entries.push(FormData.#entry(name, value, filename, arguments.length)); }
    set(name, value, filename = undefined) {
      const entry = FormData.#entry(name, value, filename, arguments.length);
      const first = this.#entries.findIndex((e) => e[0] === entry[0]);
      if (first === -1) { this.#entries.push(entry); return; }
      this.#entries[first] = entry;
      this.#entries = this.#entries.filter((e, i) => e[0] !== entry[0] || i === first);
    }
    delete(name) { name = '' + name; this.#entries = this.#entries.filter((e) => e[0] !== name); }
    get(name) { name = '' + name; const e = this.#entries.find((x) => x[0] === name); return e === undefined ? null : e[1]; }
    getAll(name) { name = '' + name; return this.#entries.filter((e) => e[0] === name).map((e) => e[1]); }
    has(name) { name = '' + name; return this.#entries.some((e) => e[0] === name); }
    forEach(callback, thisArg = undefined) {
      for (let i = 0; i < this.#entries.length; ++i) call(callback, thisArg, this.#entries[i][1], this.#entries[i][0], this);
    }
    // Live, by index, as the standard's iterators: entries added or removed while iterating show.
    *entries() { for (let i = 0; i < this.#entries.length; ++i) yield [this.#entries[i][0], this.#entries[i][1]]; }
    *keys() { for (const [name] of this.entries()) yield name; }
    *values() { for (const [, value] of this.entries()) yield value; }
    [SymbolIterator]() { return this.entries(); }
    // multipart/form-data (HTML's "multipart/form-data encoding algorithm"): [bytes, content-type].
    static _encode(form) {
      const boundary = '----formdata-codemode-' + randomUUID().replace(/-/g, '');
      const escape = (text) => text.replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/"/g, '%22');
      const lines = (text) => text.replace(/\r\n|\r|\n/g, '\r\n');
      const parts = [];
      for (const [name, value] of form.#entries) {
        let head = '--' + boundary + '\r\nContent-Disposition: form-data; name="' + escape(lines(name)) + '"';
        if (typeof value === 'string') {
          parts.push(head + '\r\n\r\n' + lines(value) + '\r\n');
        } else {
          head += '; filename="' + escape(value.name) + '"\r\nContent-Type: ' + (value.type || 'application/octet-stream') + '\r\n\r\n';
          parts.push(head, value, '\r\n');
        }
      }
      parts.push('--' + boundary + '--\r\n');
      return [Blob._bytes(new Blob(parts)), 'multipart/form-data; boundary=' + boundary];
    }
  }
  tag(FormData, 'FormData');
  define(global, 'FormData', FormData);

  // ---------------------------------------------------------------- console.table
  // Node's layout (lib/internal/cli_table.js): box-drawing borders, cells left-aligned with one
  // space of padding, an "(index)" column, "Values" for primitive rows; primitives as node
  // writes them (strings in single quotes).
  function tableCell(value) {
    if (typeof value === 'string') return "'" + value.replace(/'/g, "\\'") + "'";
    return describe(value, 1, []);
  }
  function renderTable(head, columns) {
    const rows = columns.length === 0 ? 0 : columns[0].length;
    const width = head.map((h, i) => {
      let w = h.length;
      for (let r = 0; r < rows; ++r) w = MathMax(w, columns[i][r].length);
      return w + 2;
    });
    const line = (l, m, r) => l + width.map((w) => '─'.repeat(w)).join(m) + r;
    const row = (cells) => '│' + cells.map((c, i) => ' ' + c + ' '.repeat(width[i] - c.length - 1)).join('│') + '│';
    const out = [line('┌', '┬', '┐'), row(head), line('├', '┼', '┤')];
    for (let r = 0; r < rows; ++r) out.push(row(columns.map((c) => c[r])));
    out.push(line('└', '┴', '┘'));
    return out.join('\n');
  }
  define(console, 'table', {table(data, properties = undefined) {
    if (data === null || typeof data !== 'object') return hostLog(0, format([data]));
    const indexName = data instanceof MapCtor || data instanceof SetCtor ? '(iteration index)' : '(index)';
    const keys = [];
    const valuesByKey = {__proto__: null};
    const index = [];
    const primitives = [];
    let hasPrimitives = false;
    let entries;
    if (data instanceof MapCtor) {
      entries = [...data].map(([k, v], i) => [i, {Key: k, Values: v}]);
    } else if (data instanceof SetCtor) {
      entries = [...data].map((v, i) => [i, v]);
    } else {
      entries = ObjectKeys(data).map((k) => [k, data[k]]);
    }
    const mapRows = data instanceof MapCtor;
    entries.forEach(([k, v], r) => {
      index.push('' + k);
      if (v !== null && typeof v === 'object' && !mapRows || mapRows) {
        const own = mapRows ? ['Key', 'Values'] : ObjectKeys(v);
        for (const key of own) {
          if (properties !== undefined && [...properties].map(String).indexOf(key) === -1) continue;
          if (!(key in valuesByKey)) { keys.push(key); valuesByKey[key] = []; }
          valuesByKey[key][r] = tableCell(v[key]);
        }
        primitives[r] = '';
      } else {
        hasPrimitives = true;
        primitives[r] = tableCell(v);
      }
    });
    const columnKeys = properties !== undefined ? [...properties].map(String) : keys;
    const head = [indexName].concat(columnKeys);
    const columns = [index].concat(columnKeys.map((key) => {
      const cells = [];
      for (let r = 0; r < index.length; ++r) cells.push((valuesByKey[key] || [])[r] ?? '');
      return cells;
    }));
    if (hasPrimitives && properties === undefined) { head.push('Values'); columns.push(primitives); }
    hostLog(0, renderTable(head, columns));
  }}.table);

  // ---------------------------------------------------------------- what the host keeps
  function replacer(key, value) {
    return typeof value === 'bigint' ? '' + value : value;
  }
  function serialize(value) {
    const text = JSONStringify(value, replacer);
    return text === undefined ? 'null' : text;
  }
  return {serialize, describe: (value) => format([value]),
          urlClasses: {ifMade: () => urlClasses, make: makeUrlClasses},
          web: {Blob, File, FormData, AbortSignal}};
})
