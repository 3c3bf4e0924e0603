// The web APIs beyond the encoders and URL that generated code reaches for: Event and EventTarget,
// AbortController and AbortSignal, performance, crypto, Blob, File, FormData (and the parser
// behind fetch.js's body.formData()) and console.table.
// Not in the globals snapshot: bootstrap.js has the host compile it (host.loadVendor(3)) on a
// call's first use of one of these globals (or of a signal, Blob or FormData in fetch.js), and
// calls it with its `kit` (helpers and host primitives captured there, which stay in these
// closures); it returns the values, which bootstrap.js puts on the global object where the code
// has not put its own. In the snapshot they cost every isolate of both tools ~0.2 ms of CPU
// (isolate_bench), for the few calls that use them.
//
//   host.randomFill(uint8array)           the kernel's CSPRNG, at most 65536 bytes
//   host.digest(0..3, input, output)      SHA-1/256/384/512 by node's OpenSSL, into `output`
(function web(host, kit) {
  'use strict';
  const {define, tag, call, describe, format, hostLog, hostSetTimeout, hostUtf8Encode,
         hostUtf8Decode, DOMException, console} = kit;
  // The builtins as bootstrap.js captured them before any code ran: this file is compiled after
  // the call's code has run, when the globals may be the code's own.
  const {ObjectKeys, ObjectDefineProperty, ObjectGetPrototypeOf, ObjectGetOwnPropertyDescriptor,
         MathMin, MathMax, MathTrunc, TypeErrorCtor, SymbolIterator, SymbolToStringTag, MapCtor,
         SetCtor, DateNow, WeakMapCtor, Uint8ArrayCtor, ArrayBufferCtor,
         ArrayBufferIsView, PromiseResolve, PromiseReject} = kit.primordials;

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

  // ---------------------------------------------------------------- performance
  // Milliseconds since the call's context was made, in whole milliseconds: no finer than
  // Date.now(), the clock the sandbox already gives (a finer one is a timer for side channels).
  // Never goes backwards, even when the wall clock does.
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
  const crypto = new Crypto(kAbortKey);

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
    stream() {
      throw new TypeErrorCtor('Blob.stream: there are no streams in the sandbox; read the Blob ' +
                              'with text(), bytes() or arrayBuffer()');
    }
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
    // Body.formData() (js/fetch.js): `bytes` read by the body's content type, as the Fetch
    // Standard says: application/x-www-form-urlencoded, or multipart/form-data with its boundary
    // (parts with a filename become Files). Anything else is a TypeError that says what to use.
    static _parse(bytes, contentType, what) {
      const type = ('' + contentType).toLowerCase();
      const form = new FormData();
      if (/^\s*application\/x-www-form-urlencoded\s*(;|$)/.test(type)) {
        for (const [name, value] of parseUrlencoded(bytes)) form.#entries.push([name, value]);
        return form;
      }
      const boundary = /^\s*multipart\/form-data\s*;(?:.*;)?\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec('' + contentType);
      if (boundary === null) {
        throw new TypeErrorCtor(what + '.formData: the body is ' +
                                (type ? type.split(';')[0] : 'of no content type') +
                                ', not multipart/form-data or application/x-www-form-urlencoded; ' +
                                'read it with text(), json(), bytes() or blob()');
      }
      for (const entry of parseMultipart(bytes, boundary[1] ?? boundary[2], what)) form.#entries.push(entry);
      return form;
    }
  }
  tag(FormData, 'FormData');

  // The application/x-www-form-urlencoded parser (URL Standard): name=value pairs split on '&',
  // '+' a space, percent-escapes decoded as bytes, then UTF-8.
  function parseUrlencoded(bytes) {
    const out = [];
    const decode = (from, to) => {
      const buffer = new Uint8ArrayCtor(to - from);
      let n = 0;
      const hex = (c) => (c >= 48 && c <= 57 ? c - 48 : c >= 65 && c <= 70 ? c - 55 : c >= 97 && c <= 102 ? c - 87 : -1);
      for (let i = from; i < to; ++i) {
        const c = bytes[i];
        if (c === 0x2b) {
          buffer[n++] = 0x20;
        } else if (c === 0x25 && i + 2 < to && hex(bytes[i + 1]) >= 0 && hex(bytes[i + 2]) >= 0) {
          buffer[n++] = hex(bytes[i + 1]) * 16 + hex(bytes[i + 2]);
          i += 2;
        } else {
          buffer[n++] = c;
        }
      }
      return hostUtf8Decode(buffer.subarray(0, n));
    };
    for (let start = 0; start <= bytes.length;) {
      let end = bytes.indexOf(0x26, start);
      if (end === -1) end = bytes.length;
      if (end > start) {
        let equals = bytes.indexOf(0x3d, start);
        if (equals === -1 || equals > end) equals = end;
        out.push([decode(start, equals), decode(MathMin(equals + 1, end), end)]);
      }
      start = end + 1;
    }
    return out;
  }

  // multipart/form-data (RFC 7578) into [name, string or File] entries: each part's
  // Content-Disposition name and filename, its Content-Type, its bytes (text as UTF-8).
  function parseMultipart(bytes, boundary, what) {
    const ascii = (text) => {
      const out = new Uint8ArrayCtor(text.length);
      for (let i = 0; i < text.length; ++i) out[i] = text.charCodeAt(i) & 0xff;
      return out;
    };
    const find = (needle, from) => {
      const first = needle[0];
      for (let i = bytes.indexOf(first, from); i !== -1 && i + needle.length <= bytes.length; i = bytes.indexOf(first, i + 1)) {
        let j = 1;
        while (j < needle.length && bytes[i + j] === needle[j]) ++j;
        if (j === needle.length) return i;
      }
      return -1;
    };
    const malformed = () => new TypeErrorCtor(what + '.formData: the multipart/form-data body does not parse');
    const delimiter = ascii('\r\n--' + boundary);
    // The first delimiter may open the body without the line break before it.
    let at = find(delimiter.subarray(2), 0);
    if (at === -1) throw malformed();
    at += delimiter.length - 2;
    const entries = [];
    const unquote = (text) => text.replace(/%22/g, '"').replace(/%0D/gi, '\r').replace(/%0A/gi, '\n');
    for (;;) {
      if (bytes[at] === 0x2d && bytes[at + 1] === 0x2d) return entries;  // the closing "--"
      const headEnd = find(ascii('\r\n\r\n'), at);
      if (headEnd === -1) throw malformed();
      const head = hostUtf8Decode(bytes.subarray(at, headEnd));
      const next = find(delimiter, headEnd + 4);
      if (next === -1) throw malformed();
      const body = bytes.slice(headEnd + 4, next);
      const disposition = /(?:^|\r\n)content-disposition:\s*form-data\s*;([^\r\n]*)/i.exec(head);
      if (disposition === null) throw malformed();
      const name = /(?:^|;)\s*name="([^"]*)"/i.exec(disposition[1]);
      if (name === null) throw malformed();
      const filename = /(?:^|;)\s*filename="([^"]*)"/i.exec(disposition[1]);
      if (filename === null) {
        entries.push([unquote(name[1]), hostUtf8Decode(body)]);
      } else {
        const type = /(?:^|\r\n)content-type:\s*([^\r\n]*)/i.exec(head);
        entries.push([unquote(name[1]), new File([body], unquote(filename[1]), {type: type === null ? '' : type[1].trim()})]);
      }
      at = next + delimiter.length;
      // Transport padding, then the line break that ends the delimiter line.
      while (bytes[at] === 0x20 || bytes[at] === 0x09) ++at;
      if (bytes[at] === 0x0d && bytes[at + 1] === 0x0a) at += 2;
      else if (!(bytes[at] === 0x2d && bytes[at + 1] === 0x2d)) throw malformed();
    }
  }

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
  const table = {table(data, properties = undefined) {
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
  }}.table;

  return {Event, EventTarget, AbortController, AbortSignal, performance, crypto, Crypto, SubtleCrypto,
          Blob, File, FormData, table};
})
