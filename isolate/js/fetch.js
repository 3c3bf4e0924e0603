// fetch(), Request, Response and Headers for `execute`: the subset of the Fetch Standard that
// API code uses, over one host primitive. Runs once per fresh context, inside bootstrap's
// closure; `helpers.hostFetch` never reaches the code.
//
//   hostFetch(method, url, headers, body) -> Promise<{status, statusText, headers, url,
//                                                    redirected, bodyId, bodyLength}>
//   hostReadBody(bodyId, uint8array)      copies the response body into the array, once
//   urlClasses.ifMade()                   bootstrap's {URL, URLSearchParams}, or null before
//                                         the code has used either; .make() makes them
//   webClasses.ifMade()                   js/web.js's values (Blob, FormData, AbortSignal, …),
//                                         or null before the code has used any; .make() makes them
//   hostAbortFetch(promise)               drops the pending hostFetch whose promise this is: its
//                                         answer is never delivered and the call no longer waits
//                                         for it
//   fetchBase                             what the gateway resolves a relative URL against (the
//                                         first upstream's origin + base path + "/"), or ''
//                                         when nothing
// `headers` is an array of [name, value] pairs, `body` undefined, a string or a Uint8Array. The
// response body is copied into memory the code owns (so the ArrayBuffer budget counts it). The
// host decides everything (origin, credentials, budget): a refusal rejects the promise with an
// error the host made.
(function fetchFactory(global, hostFetch, hostReadBody, urlClasses, fetchBase, webClasses, hostAbortFetch) {
  'use strict';
  const ObjectDefineProperty = Object.defineProperty;
  function define(object, name, value) {
    ObjectDefineProperty(object, name, {value, writable: true, configurable: true, enumerable: false});
  }
  function tag(ctor, name) {
    ObjectDefineProperty(ctor.prototype, Symbol.toStringTag, {value: name, configurable: true});
  }
  const encoder = new global.TextEncoder();
  const decoder = new global.TextDecoder();
  const utf8Encode = (text) => encoder.encode(text);
  const utf8Decode = (bytes) => decoder.decode(bytes);
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const JSONParse = JSON.parse;
  const ArrayIsArray = Array.isArray;
  const ArrayBufferCtor = ArrayBuffer;
  const ArrayBufferIsView = ArrayBuffer.isView;
  const Uint8ArrayCtor = Uint8Array;
  const PromiseCtor = Promise;
  const SymbolIterator = Symbol.iterator;
  // Whether a URL string is absolute: a scheme after what the URL parser strips from the start.
  const kHasScheme = /^[\x00-\x20]*[A-Za-z][A-Za-z0-9+.\-]*:/;
  // The base path "/x" goes under ("/api" of "http://host/api/"), as the gateway's
  // under_base_path() puts it there: a path-absolute URL not under it already.
  const kBasePath = fetchBase === '' ? '' : fetchBase.slice(fetchBase.indexOf('/', fetchBase.indexOf('//') + 2), -1);
  const kPathAbsolute = /^[\x00-\x20]*[\/\\](?![\/\\])/;
  const kLeadingC0 = /^[\x00-\x20]*/;
  function underBasePath(target) {
    if (kBasePath === '' || !kPathAbsolute.test(target)) return target;
    const rest = target.replace(kLeadingC0, '');
    const after = rest.length === kBasePath.length ? '' : rest[kBasePath.length];
    if (rest.slice(0, kBasePath.length) === kBasePath && (after === '' || '/\\?#'.indexOf(after) !== -1)) return target;
    return kBasePath + rest;
  }
  // URL and URLSearchParams are made on their first use (bootstrap.js): before that no value can
  // be one of them, and these checks do not make them.

  // The methods the Fetch Standard upper-cases (not PATCH: `patch` stays as written; the gateway
  // compares methods without case), and the ones it forbids.
  const kMethods = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT'];
  const kForbiddenMethods = ['CONNECT', 'TRACE', 'TRACK'];
  // Made once, in the execute context only, so that the snapshot keeps them compiled (a
  // literal inside a function is made and compiled again in every isolate; url.js's re()).
  const kToken = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
  const kEdgeWhitespace = /^[\t\n\r ]+|[\t\n\r ]+$/g;  // replace() only
  const kBreakingCharacter = /[\0\r\n]/;
  const kNotByteString = /[^\0-\xFF]/;  // WebIDL ByteString: no code unit above U+00FF
  const kReasonPhrase = /^[\t\x20-\x7E\x80-\xFF]*$/;
  const kNullBodyStatus = [101, 103, 204, 205, 304];
  const kRedirectStatus = [301, 302, 303, 307, 308];

  function normalizeMethod(method) {
    const m = '' + method;
    const upper = m.toUpperCase();
    if (!kToken.test(m)) throw new TypeErrorCtor('fetch: invalid method "' + m + '"');
    if (kForbiddenMethods.indexOf(upper) !== -1) throw new TypeErrorCtor('fetch: method ' + m + ' is forbidden');
    return kMethods.indexOf(upper) !== -1 ? upper : m;
  }

  // ---------------------------------------------------------------- Headers
  class Headers {
    #list = [];  // [lower-case name, value], in insertion order
    #sorted = null;  // the sort-and-combine of #list, until it changes
    #immutable = false;  // a Response.error(), Response.redirect() or fetch() response's headers
    static _freeze(headers) { headers.#immutable = true; return headers; }
    _isImmutable() { return this.#immutable; }
    #mutate() {
      if (this.#immutable) throw new TypeErrorCtor('Headers: these headers are immutable');
    }
    static #name(name) {
      const n = '' + name;
      if (!kToken.test(n)) throw new TypeErrorCtor('Headers: invalid header name "' + n + '"');
      return n.toLowerCase();
    }
    constructor(init = undefined) {
      if (init === undefined || init === null) return;
      if (init instanceof Headers) {
        for (const [name, value] of init) this.append(name, value);
      } else if (typeof init === 'object' && typeof init[SymbolIterator] === 'function') {
        for (const pair of init) {
          const entry = ArrayIsArray(pair) ? pair : [...pair];
          if (entry.length !== 2) throw new TypeErrorCtor('Headers: each header must be a [name, value] pair');
          this.append(entry[0], entry[1]);
        }
      } else if (typeof init === 'object') {
        for (const name of Object.keys(init)) this.append(name, init[name]);
      } else {
        throw new TypeErrorCtor('Headers: init must be an object, an array of pairs, or Headers');
      }
    }
    static #check(name, value) {
      const n = Headers.#name(name);
      const v = ('' + value).replace(kEdgeWhitespace, '');
      if (kNotByteString.test(v) || kBreakingCharacter.test(v)) {
        throw new TypeErrorCtor('Headers: invalid value for header "' + n + '"');
      }
      return [n, v];
    }
    append(name, value) {
      const entry = Headers.#check(name, value);
      this.#mutate();
      this.#sorted = null;
      this.#list.push(entry);
    }
    set(name, value) {
      const [n, v] = Headers.#check(name, value);
      this.#mutate();
      this.#sorted = null;
      const first = this.#list.findIndex((e) => e[0] === n);
      if (first === -1) {
        this.#list.push([n, v]);
        return;
      }
      this.#list[first][1] = v;
      this.#list = this.#list.filter((e, j) => e[0] !== n || j === first);
    }
    get(name) {
      const n = Headers.#name(name);
      const values = this.#list.filter((e) => e[0] === n).map((e) => e[1]);
      return values.length === 0 ? null : values.join(', ');
    }
    has(name) {
      const n = Headers.#name(name);
      return this.#list.some((e) => e[0] === n);
    }
    delete(name) {
      const n = Headers.#name(name);
      this.#mutate();
      this.#sorted = null;
      this.#list = this.#list.filter((e) => e[0] !== n);
    }
    getSetCookie() {
      return this.#list.filter((e) => e[0] === 'set-cookie').map((e) => e[1]);
    }
    forEach(callback, thisArg = undefined) {
      for (const [name, value] of this) callback.call(thisArg, value, name, this);
    }
    // Sorted by name, values of a repeated name combined (set-cookie kept apart), as specified.
    #sortAndCombine() {
      if (this.#sorted !== null) return this.#sorted;
      const names = [...new Set(this.#list.map((e) => e[0]))].sort();
      const pairs = [];
      for (const name of names) {
        if (name === 'set-cookie') {
          for (const value of this.getSetCookie()) pairs.push([name, value]);
        } else {
          pairs.push([name, this.get(name)]);
        }
      }
      return (this.#sorted = pairs);
    }
    // The standard's iterator: an index into the sort-and-combine of the list as it is at each
    // step, so headers set or deleted while iterating show as they would in node.
    *entries() {
      for (let i = 0; ; ++i) {
        const pairs = this.#sortAndCombine();
        if (i >= pairs.length) return;
        yield [pairs[i][0], pairs[i][1]];
      }
    }
    *keys() { for (const [name] of this.entries()) yield name; }
    *values() { for (const [, value] of this.entries()) yield value; }
    [SymbolIterator]() { return this.entries(); }
  }
  tag(Headers, 'Headers');

  // ---------------------------------------------------------------- bodies
  // Returns [bytes or string or undefined, default content-type or null].
  function extractBody(body) {
    if (body === undefined || body === null) return [undefined, null];
    if (typeof body === 'string') return [body, 'text/plain;charset=UTF-8'];
    const url = urlClasses.ifMade();
    if (url !== null && body instanceof url.URLSearchParams) {
      return ['' + body, 'application/x-www-form-urlencoded;charset=UTF-8'];
    }
    // Before js/web.js is made no value can be a Blob or FormData; these checks do not make it.
    const web = webClasses.ifMade();
    if (web !== null && body instanceof web.Blob) return [web.Blob._bytes(body).slice(), body.type === '' ? null : body.type];
    if (web !== null && body instanceof web.FormData) return web.FormData._encode(body);
    if (body instanceof ArrayBufferCtor) return [new Uint8ArrayCtor(body.slice(0)), null];
    if (ArrayBufferIsView(body)) {
      return [new Uint8ArrayCtor(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength)), null];
    }
    throw new TypeErrorCtor('fetch: unsupported body type; send a string (e.g. JSON.stringify(data)), ' +
                            'URLSearchParams, FormData, a Blob, an ArrayBuffer or a typed array');
  }

  function bodyBytes(body) {
    if (body === undefined) return new Uint8ArrayCtor(0);
    if (typeof body === 'string') return utf8Encode(body);
    if (body instanceof Uint8ArrayCtor) return body;
    return new Uint8ArrayCtor(body);
  }

  // Shared by Request and Response: one-shot body readers.
  class Body {
    #body;
    #used = false;
    constructor(body) { this.#body = body; }
    get bodyUsed() { return this.#used; }
    get body() { return null; }  // no streams here; use text(), json() or arrayBuffer()
    #take() {
      if (this.#used) return PromiseCtor.reject(new TypeErrorCtor('Body has already been consumed'));
      this.#used = true;
      return PromiseCtor.resolve(this.#body);
    }
    _peek() { return this.#body; }
    arrayBuffer() {
      return this.#take().then((b) => {
        const bytes = bodyBytes(b);
        return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
      });
    }
    text() {
      return this.#take().then((b) => (typeof b === 'string' ? b : utf8Decode(bodyBytes(b))));
    }
    json() {
      return this.text().then((text) => JSONParse(text));
    }
    blob() {
      return this.arrayBuffer().then((buffer) => webClasses.make().Blob._of(new Uint8ArrayCtor(buffer), this.headers.get('content-type') ?? ''));
    }
    bytes() {
      return this.arrayBuffer().then((buffer) => new Uint8ArrayCtor(buffer));
    }
    formData() {
      const what = this instanceof Request ? 'Request' : 'Response';
      return this.arrayBuffer().then((buffer) => webClasses.make().FormData._parse(
          new Uint8ArrayCtor(buffer), this.headers.get('content-type') ?? '', what));
    }
  }

  // ---------------------------------------------------------------- Request
  const kFromFetch = {};  // fetch()'s own Request: the third argument only fetch() can give
  class Request extends Body {
    #method; #url; #headers; #redirect; #given; #signal = null;
    constructor(input, init = {}, from = undefined) {
      const base = input instanceof Request ? input : null;
      const [extracted, contentType] =
          init.body !== undefined ? extractBody(init.body) : [base ? base._peek() : undefined, null];
      super(extracted);
      const url = urlClasses.ifMade();
      this.#url = base ? base._target() : (url !== null && input instanceof url.URL ? input.href : '' + input);
      // fetch()'s own Request passes a relative URL on as written: the gateway's refusal (no
      // upstream) is a policy error the call's requests record.
      if (fetchBase === '' && from !== kFromFetch && !base && !kHasScheme.test(this.#url)) {
        throw new TypeErrorCtor('Request: "' + this.#url + '" is a relative URL, and there is no upstream to resolve it against');
      }
      this.#method = init.method !== undefined ? normalizeMethod(init.method) : (base ? base.method : 'GET');
      this.#headers = new Headers(init.headers !== undefined ? init.headers : (base ? base.headers : undefined));
      if (contentType !== null && !this.#headers.has('content-type')) this.#headers.set('content-type', contentType);
      if (extracted !== undefined && (this.#method === 'GET' || this.#method === 'HEAD')) {
        throw new TypeErrorCtor('fetch: a ' + this.#method + ' request cannot have a body');
      }
      this.#redirect = init.redirect !== undefined ? '' + init.redirect : (base ? base.redirect : 'follow');
      const signal = init.signal !== undefined ? init.signal : (base ? base._givenSignal() : null);
      if (signal !== null && !(signal instanceof webClasses.make().AbortSignal)) {
        throw new TypeErrorCtor('Request: init.signal must be an AbortSignal or null');
      }
      this.#given = signal;
      // A URL that cannot be parsed is the constructor's TypeError, as in node (fetch()'s own
      // Request passes it on: the gateway's refusal names it, and fetch() rejects with it).
      if (from !== kFromFetch && !base) {
        const {URL} = urlClasses.make();
        if (!URL.canParse(underBasePath(this.#url), fetchBase === '' ? undefined : fetchBase)) {
          throw new TypeErrorCtor('Request: "' + this.#url + '" is not a valid URL');
        }
      }
    }
    // The request's own signal follows the one given, as the standard's does; made when first
    // asked for, so that a fetch() without a signal makes none.
    get signal() {
      const {AbortController, AbortSignal} = webClasses.make();
      return this.#signal ??= this.#given === null ? new AbortController().signal : AbortSignal.any([this.#given]);
    }
    _givenSignal() { return this.#given; }
    get method() { return this.#method; }
    // The URL as the URL Standard serialises it, a relative one resolved against the first
    // upstream, as the gateway resolves it: where fetch() sends this request. fetch() hands the
    // host the text as written (the gateway's normalisation decides), so that a call that
    // never reads this makes no URL.
    get url() {
      const {URL} = urlClasses.make();
      const against = fetchBase === '' ? undefined : fetchBase;
      const target = underBasePath(this.#url);
      return URL.canParse(target, against) ? new URL(target, against).href : this.#url;
    }
    _target() { return this.#url; }
    get headers() { return this.#headers; }
    get redirect() { return this.#redirect; }
    clone() { return new Request(this); }
  }
  tag(Request, 'Request');

  // ---------------------------------------------------------------- Response
  class Response extends Body {
    #status; #statusText; #headers; #url; #redirected; #type = 'default';
    constructor(body = null, init = {}) {
      const [extracted, contentType] = extractBody(body);
      super(extracted);
      init = init === undefined || init === null ? {} : init;
      this.#status = init.status !== undefined ? init.status | 0 : 200;
      if (this.#status < 200 || this.#status > 599) throw new RangeErrorCtor('Response: status must be in 200..599');
      this.#statusText = init.statusText !== undefined ? '' + init.statusText : '';
      if (!kReasonPhrase.test(this.#statusText)) throw new TypeErrorCtor('Response: invalid statusText');
      if (extracted !== undefined && kNullBodyStatus.indexOf(this.#status) !== -1) {
        throw new TypeErrorCtor('Response: a ' + this.#status + ' response cannot have a body');
      }
      this.#headers = new Headers(init.headers);
      if (contentType !== null && !this.#headers.has('content-type')) this.#headers.set('content-type', contentType);
      this.#url = '';
      this.#redirected = false;
    }
    static _fromHost(raw) {
      const response = new Response(raw.body, {status: 200, headers: raw.headers});
      response.#status = raw.status;
      response.#statusText = raw.statusText;
      response.#url = raw.url;
      response.#redirected = raw.redirected;
      response.#type = raw.type || 'basic';
      if (raw.immutable !== false) Headers._freeze(response.#headers);
      return response;
    }
    static error() {
      const response = new Response(null);
      response.#status = 0;
      response.#type = 'error';
      Headers._freeze(response.#headers);
      return response;
    }
    static redirect(url, status = 302) {
      const {URL} = urlClasses.make();
      const location = new URL(url).href;  // no base here: a relative URL is a TypeError
      status = status | 0;
      if (kRedirectStatus.indexOf(status) === -1) throw new RangeErrorCtor('Response.redirect: invalid status ' + status);
      const response = new Response(null, {status, headers: {location}});
      Headers._freeze(response.#headers);
      return response;
    }
    static json(data, init = {}) {
      const text = JSON.stringify(data);
      if (text === undefined) throw new TypeErrorCtor('Response.json: the value is not JSON serializable');
      init = init === undefined || init === null ? {} : init;
      const headers = new Headers(init.headers);
      if (!headers.has('content-type')) headers.set('content-type', 'application/json');
      return new Response(text, {...init, headers});
    }
    get status() { return this.#status; }
    get ok() { return this.#status >= 200 && this.#status <= 299; }
    get statusText() { return this.#statusText; }
    get headers() { return this.#headers; }
    get url() { return this.#url; }
    get redirected() { return this.#redirected; }
    get type() { return this.#type; }
    clone() {
      if (this.bodyUsed) throw new TypeErrorCtor('Response.clone: the body has already been consumed');
      const copy = Response._fromHost({status: this.#status, statusText: this.#statusText,
                                       headers: this.#headers, body: this._peek(), url: this.#url,
                                       redirected: this.#redirected, type: this.#type,
                                       immutable: false});
      if (this.#headers._isImmutable()) Headers._freeze(copy.#headers);
      return copy;
    }
  }
  tag(Response, 'Response');

  // ---------------------------------------------------------------- fetch
  // With a signal: aborted before it is sent, nothing is sent; aborted while pending, the
  // promise rejects with the signal's reason at once and the host drops the request's answer
  // (hostAbortFetch), so the call neither waits for it nor gets it.
  async function fetch(input, init = undefined) {
    const request = new Request(input, init || {}, kFromFetch);
    const signal = request._givenSignal();
    if (signal !== null) signal.throwIfAborted();
    const pairs = [];
    for (const pair of request.headers) pairs.push(pair);
    const body = request._peek();
    const pending = hostFetch(request.method, request._target(), pairs,
                              typeof body === 'string' ? utf8Encode(body) : body);
    let raw;
    if (signal === null) {
      raw = await pending;
    } else {
      let onAbort;
      const aborted = new PromiseCtor((resolve, reject) => {
        onAbort = (reason) => { hostAbortFetch(pending); reject(reason); };
        signal._onAbort(onAbort);
      });
      pending.catch(() => {});  // dropped or lost the race: nobody else hears of it
      try {
        raw = await PromiseCtor.race([pending, aborted]);
      } finally {
        signal._offAbort(onAbort);
      }
    }
    const bytes = new Uint8ArrayCtor(raw.bodyLength);
    hostReadBody(raw.bodyId, bytes);
    raw.body = bytes;
    return Response._fromHost(raw);
  }

  define(global, 'fetch', fetch);
  define(global, 'Headers', Headers);
  define(global, 'Request', Request);
  define(global, 'Response', Response);
})
